package sqlq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PG runs statements on PostgreSQL straight on pgx, over connections of
// database/sql's pool (the pool GORM, the health check and the metrics
// share). Going past database/sql's per-column conversions is what made
// the batch statements cheaper; one way for every statement keeps the
// dialect's code in one style.
//
// A query's plan: pgx prepares and caches each statement per connection,
// so PostgreSQL may switch to a generic plan after five runs. A query
// whose best plan depends on its arguments (a range that is usually the
// newest few rows) passes pgx.QueryExecModeExec as its first argument to
// be planned for them every time.
type PG struct {
	db *sql.DB
}

// NewPG runs statements on db, a pool opened with pgx's stdlib driver.
func NewPG(db *sql.DB) *PG { return &PG{db: db} }

// Conn runs f on one pooled connection, as pgx.
func (p *PG) Conn(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := p.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqlq: a PostgreSQL pool of %T, not pgx's", driverConn)
		}
		return f(sc.Conn())
	})
}

// Tx runs f in a transaction on one connection: committed when f returns
// nil, rolled back otherwise.
func (p *PG) Tx(ctx context.Context, f func(Runner) error) error {
	return p.Conn(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return f(pgRunner{tx}) })
	})
}

// Exec runs query on a pooled connection.
func (p *PG) Exec(ctx context.Context, query string, args ...any) (n int64, err error) {
	err = p.Conn(ctx, func(c *pgx.Conn) error {
		n, err = pgRunner{c}.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

// QueryRow runs query on a pooled connection.
func (p *PG) QueryRow(ctx context.Context, query string, args ...any) Row {
	return deferredRow{run: func(dest []any) error {
		return p.Conn(ctx, func(c *pgx.Conn) error { return c.QueryRow(ctx, query, args...).Scan(dest...) })
	}}
}

// Query runs query on a pooled connection.
func (p *PG) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	return p.Conn(ctx, func(c *pgx.Conn) error { return pgRunner{c}.Query(ctx, query, args, each) })
}

// PGQuerier is what pgx's connections and transactions share.
type PGQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgRunner is a Runner over a pgx connection or transaction.
type pgRunner struct{ q PGQuerier }

// Wrap is a Runner over q, a connection or transaction of pgx.
func Wrap(q PGQuerier) Runner { return pgRunner{q} }

func (r pgRunner) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := r.q.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (r pgRunner) QueryRow(ctx context.Context, query string, args ...any) Row {
	return r.q.QueryRow(ctx, query, args...)
}

func (r pgRunner) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	rows, err := r.q.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	rows.Close()
	return rows.Err()
}

// deferredRow runs its query when it is scanned, so that the connection
// it needs is held only for that.
type deferredRow struct{ run func(dest []any) error }

func (r deferredRow) Scan(dest ...any) error { return r.run(dest) }

// PGCode is err's PostgreSQL SQLSTATE, if err came from the server.
func PGCode(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, true
	}
	return "", false
}
