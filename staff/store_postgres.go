package staff

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// postgresStore plans the audit page's reads whose best plan depends on
// their arguments for them every time (dbStore.replan), and binds a list
// of payment ids as an array.
type postgresStore struct {
	dbStore
}

func newPostgresStore(db *sqlq.PG) store {
	q := sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/postgres.sql")
	return postgresStore{dbStore{shared: shared{r: db, q: q}, db: db, replan: []any{pgx.QueryExecModeExec}}}
}

func (st postgresStore) currencies(ctx context.Context, ids []string) (map[string]string, error) {
	return currencyMap(sqlq.Collect(ctx, st.db, st.q.SQL("payment_currencies"), []any{ids}, scanCurrency))
}
