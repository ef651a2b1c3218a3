package events

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// postgresStore serves PostgreSQL, where ids are given after commit by
// the leader's sequencer (sequencer_postgres.go) and recorded per pass in
// event_batches: an event's id is its pass's first_id plus its place in
// the pass.
type postgresStore struct {
	shared
	pg *sqlq.PG
}

func newPostgresStore(db *sqlq.PG) store {
	return &postgresStore{shared: newShared(db, "postgres"), pg: db}
}

// Queries whose best plan depends on their arguments (a range that is
// usually the newest few rows) pass pgx.QueryExecModeExec first, to be
// planned for them every time.

func (st *postgresStore) numbered(ctx context.Context, after, upTo int64, f Filter) ([]Event, error) {
	return readEvents(ctx, st.db, st.q.SQL("numbered_events"), pgx.QueryExecModeExec, after, upTo, f.ClientID, f.PaymentID)
}

func (st *postgresStore) bySeq(ctx context.Context, seqs []int64) (map[int64]Event, error) {
	return readBySeq(ctx, st.db, st.q.SQL("events_by_seq"), seqs)
}

func (st *postgresStore) sweepDeliveries(ctx context.Context, c cutoffs) (deliverySweep, error) {
	return st.shared.sweepDeliveries(ctx, c, st.expireFailed)
}

// expireFailed deletes up to sweepBatch FAILED deliveries last tried
// before cut, and their attempts, in one statement (sql/postgres.sql
// expire_failed).
func (st *postgresStore) expireFailed(ctx context.Context, cut time.Time) (int64, error) {
	var n int64
	err := st.db.QueryRow(ctx, st.q.SQL("expire_failed"), cut, sweepBatch).Scan(&n)
	return n, err
}

// sweepEvents deletes the oldest passes' events and their batch rows, a
// pass at a time, while every event of the pass is older than cut.old; a
// pass with a delivery that still needs its event (pending without a
// stored body, or FAILED before bodies were stored and not yet expired)
// is kept whole (and the sweep goes on past it), and so is the newest
// pass, whose last_id the next pass counts from. What a pass needs is
// read before it is deleted, in another statement: it holds because a
// resend in between turns a FAILED delivery into a pending one, both of
// which keep the pass (old_passes).
//
// What bounds a kept pass: a delivery is pending for at most
// WEBHOOK_MAX_AGE after it was made, and one that fails stores its body,
// so its event is no longer needed. So a pass goes at most
// WEBHOOK_MAX_AGE (plus an attempt's timeout and a sweep interval) after
// it was made, however long FAILED deliveries are kept.
func (st *postgresStore) sweepEvents(ctx context.Context, cut cutoffs) (int64, error) {
	var total int64
	err := st.pg.Conn(ctx, func(c *pgx.Conn) error {
		r := sqlq.Wrap(c)
		type pass struct {
			last   int64
			seqs   []int64
			newest *time.Time
			kept   bool
		}
		var from int64
		for ctx.Err() == nil {
			args := []any{pgx.QueryExecModeExec, from}
			passes, err := sqlq.Collect(ctx, r, st.q.SQL("old_passes"), args, func(row sqlq.Row) (pass, error) {
				var p pass
				err := row.Scan(&p.last, &p.seqs, &p.newest, &p.kept)
				return p, err
			})
			if err != nil {
				return err
			}
			st.afterSweepRead()
			for _, p := range passes {
				if p.newest != nil && !p.newest.Before(cut.old) {
					return nil // from here on, events are young enough to keep
				}
				from = p.last
				if p.kept {
					continue
				}
				n, err := r.Exec(ctx, st.q.SQL("delete_pass"), p.seqs, p.last)
				if err != nil {
					return err
				}
				if n == 1 {
					total += int64(len(p.seqs))
				}
			}
			if len(passes) < 100 {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("sweep events: %w", err)
	}
	return total, nil
}
