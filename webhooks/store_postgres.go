package webhooks

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// postgresStore claims with FOR UPDATE SKIP LOCKED, so that instances
// claiming at once never take the same delivery, and records a batch of
// attempts in one statement over arrays.
type postgresStore struct {
	shared
}

func newPostgresStore(db *sqlq.PG) store {
	return &postgresStore{shared{db: db, q: sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/postgres.sql"),
		idList:  func(ids []int64) (any, error) { return ids, nil },
		planned: []any{pgx.QueryExecModeExec}}}
}

func (st *postgresStore) claim(ctx context.Context, now, until time.Time, token int64, n int, l inFlight) ([]claim, error) {
	perEndpoint, perClient, withFirsts := l.caps()
	endpoints, endpointLoads := loadArrays(l.Endpoints)
	clients, clientLoads := loadArrays(l.Clients)
	// Planned for its arguments every time: a cached generic plan might
	// scan every delivery ever made.
	out, err := sqlq.Collect(ctx, st.db, st.q.SQL("claim"), []any{pgx.QueryExecModeExec, now, n, until, token,
		endpoints, endpointLoads, claimWindow(n), perEndpoint, perClient, clients, clientLoads, nonNil(l.Fast), nonNil(l.Silent), withFirsts}, scanClaim)
	for i := range out {
		out[i].Token = token
	}
	return out, err
}

func (st *postgresStore) record(ctx context.Context, batch []result, outs []outcome) error {
	n := len(batch)
	ids, tokens, tooks := make([]int64, n), make([]int64, n), make([]int64, n)
	statuses, problems := make([]string, n), make([]string, n)
	nexts, ats := make([]time.Time, n), make([]time.Time, n)
	retries, codes := make([]int32, n), make([]int32, n)
	oks := make([]bool, n)
	bodies := make([]*string, n)
	for i, r := range batch {
		ids[i], tokens[i], tooks[i] = r.ID, r.Token, r.took.Milliseconds()
		statuses[i], problems[i], nexts[i], ats[i] = outs[i].status, r.problem, outs[i].next, r.at
		retries[i], codes[i], oks[i] = int32(outs[i].retries), int32(r.status), r.ok
		bodies[i] = failedBody(r, outs[i])
	}
	_, err := st.db.Exec(ctx, st.q.SQL("record"), ids, tokens, statuses, nexts, retries, codes, problems, ats, tooks, oks, bodies)
	return err
}

func (st *postgresStore) refundsOf(ctx context.Context, ids []string) ([]models.Refund, error) {
	return sqlq.Collect(ctx, st.db, st.q.SQL("refunds_of"), []any{ids}, scanRefund)
}

// nonNil is ids, never nil: pgx binds a nil slice as NULL, and x =
// ANY(NULL) is NULL, not false.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// loadArrays is m as two arrays PostgreSQL unnests side by side.
func loadArrays(m map[string]int) ([]string, []int32) {
	ids, loads := make([]string, 0, len(m)), make([]int32, 0, len(m))
	for id, n := range m {
		ids, loads = append(ids, id), append(loads, int32(n))
	}
	return ids, loads
}
