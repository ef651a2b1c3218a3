package staff

import (
	"context"
	"encoding/json"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// sqliteStore passes a list of payment ids as a JSON array: SQLite binds
// no arrays.
type sqliteStore struct {
	dbStore
}

func newSQLiteStore(db *sqlq.Lite) store {
	q := sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/sqlite.sql")
	return sqliteStore{dbStore{shared: shared{r: db, q: q}, db: db}}
}

func (st sqliteStore) currencies(ctx context.Context, ids []string) (map[string]string, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return currencyMap(sqlq.Collect(ctx, st.db, st.q.SQL("payment_currencies"), []any{string(list)}, scanCurrency))
}
