package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// sqliteStore claims in a write transaction, where nothing else claims
// meanwhile, and records a batch of attempts a row at a time in one
// transaction: SQLite has one writer, and the commit is what costs.
type sqliteStore struct {
	shared
}

func newSQLiteStore(db *sqlq.Lite) store {
	return &sqliteStore{shared{db: db, q: sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/sqlite.sql"), idList: jsonIDs}}
}

func (st *sqliteStore) claim(ctx context.Context, now, until time.Time, token int64, n int, l inFlight) ([]claim, error) {
	perEndpoint, perClient, withFirsts := l.caps()
	endpoints, err := loadJSON(l.Endpoints)
	if err != nil {
		return nil, err
	}
	clients, err := loadJSON(l.Clients)
	if err != nil {
		return nil, err
	}
	fast, err := json.Marshal(nonNil(l.Fast))
	if err != nil {
		return nil, err
	}
	silent, err := json.Marshal(nonNil(l.Silent))
	if err != nil {
		return nil, err
	}
	// Look before taking the write lock, which the one writer needs for
	// payments.
	var due bool
	if err := st.db.QueryRow(ctx, st.q.SQL("any_due"), now).Scan(&due); err != nil || !due {
		return nil, err
	}
	var out []claim
	err = st.db.Tx(ctx, func(tx sqlq.Runner) error {
		claimed, err := tx.Exec(ctx, st.q.SQL("claim"), until, token, now, n, endpoints, clients, perEndpoint, perClient, claimWindow(n),
			string(fast), string(silent), withFirsts)
		if err != nil || claimed == 0 {
			return err
		}
		out, err = sqlq.Collect(ctx, tx, st.q.SQL("claimed"), []any{token}, scanClaim)
		return err
	})
	for i := range out {
		out[i].Token = token
	}
	return out, err
}

func (st *sqliteStore) record(ctx context.Context, batch []result, outs []outcome) error {
	return st.db.Tx(ctx, func(tx sqlq.Runner) error {
		for i, r := range batch {
			o := outs[i]
			var delivered *time.Time
			if r.ok {
				delivered = &r.at
			}
			n, err := tx.Exec(ctx, st.q.SQL("record"), o.status, o.next, o.retries, r.at, r.status, r.problem, r.ID, r.Token, delivered,
				failedBody(r, o))
			if err != nil {
				return err
			}
			if n == 0 {
				continue // the claim was lost: another instance holds it now
			}
			if _, err := tx.Exec(ctx, st.q.SQL("add_attempt"), r.ID, r.at, r.status, r.problem, r.took.Milliseconds()); err != nil {
				return err
			}
		}
		return nil
	})
}

func (st *sqliteStore) refundsOf(ctx context.Context, ids []string) ([]models.Refund, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(ctx, st.db, st.q.SQL("refunds_of"), []any{string(list)}, scanRefund)
}

// loadJSON is m as the JSON array of [id, n] pairs the claim reads with
// json_each.
func loadJSON(m map[string]int) (string, error) {
	pairs := make([][2]any, 0, len(m))
	for id, n := range m {
		pairs = append(pairs, [2]any{id, n})
	}
	b, err := json.Marshal(pairs)
	return string(b), err
}

// jsonIDs is ids as a JSON array, which json_each reads.
func jsonIDs(ids []int64) (any, error) {
	b, err := json.Marshal(ids)
	return string(b), err
}
