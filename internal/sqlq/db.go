package sqlq

import "context"

// DB is what *PG and *Lite both are: a Runner on the pool that also runs
// transactions. A store's code that both dialects run alike takes one.
type DB interface {
	Runner
	// Tx runs f in a transaction: committed when f returns nil, rolled
	// back otherwise.
	Tx(ctx context.Context, f func(Runner) error) error
}

var (
	_ DB = (*PG)(nil)
	_ DB = (*Lite)(nil)
)
