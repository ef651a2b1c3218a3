package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
)

// sqliteStore serves SQLite, where an event's id is its seq: one writer at
// a time makes insertion order commit order (and AUTOINCREMENT never gives
// a seq twice), so an event is numbered the moment it commits. Its
// sequencer only creates the deliveries of the events past its cursor.
type sqliteStore struct {
	shared
}

func newSQLiteStore(db *sqlq.Lite) store {
	return &sqliteStore{newShared(db, "sqlite")}
}

func (st *sqliteStore) numbered(ctx context.Context, after, upTo int64, f Filter) ([]Event, error) {
	return readEvents(ctx, st.db, st.q.SQL("numbered_events"), after, upTo, f.ClientID, f.PaymentID)
}

func (st *sqliteStore) bySeq(ctx context.Context, seqs []int64) (map[int64]Event, error) {
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return readBySeq(ctx, st.db, st.q.SQL("events_by_seq"), string(list))
}

// sequence gives events their deliveries shortly after a write commits
// (to.wake), and every to.poll besides.
func (st *sqliteStore) sequence(ctx context.Context, to sequencing) {
	to.leading(true)
	defer to.leading(false)
	tick := time.NewTicker(to.poll)
	defer tick.Stop()
	fails := &logrepeat.Failures{Logger: to.log, What: "events: number events"}
	for {
		if err := st.pass(ctx, to); ctx.Err() == nil {
			fails.Report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-to.wake:
			// Let the writes of the next few milliseconds join this pass:
			// under load one pass serves many of them.
			select {
			case <-ctx.Done():
				return
			case <-time.After(pollBusy):
			}
		case <-tick.C:
		}
	}
}

// passBatch is the most events one pass takes (sql/sqlite.sql, unnumbered).
const passBatch = 5000

// pass creates the deliveries of the events past the cursor and moves it,
// in one transaction, then tells the Service; again while a pass finds a
// full batch.
func (st *sqliteStore) pass(ctx context.Context, to sequencing) error {
	for {
		var n, hi, deliveries int64
		err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
			var cursor int64
			if err := tx.QueryRow(ctx, st.q.SQL("deliveries_cursor")).Scan(&cursor); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, st.q.SQL("unnumbered"), cursor).Scan(&n, &hi); err != nil || n == 0 {
				return err
			}
			var err error
			if deliveries, err = tx.Exec(ctx, st.q.SQL("create_deliveries"), cursor, hi, to.now()); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, st.q.SQL("save_deliveries_cursor"), hi)
			return err
		})
		if err != nil {
			return fmt.Errorf("number events: %w", err)
		}
		if n == 0 {
			return nil
		}
		to.numbered(hi, deliveries > 0)
		if n < passBatch {
			return nil
		}
	}
}

func (st *sqliteStore) sweepDeliveries(ctx context.Context, c cutoffs) (deliverySweep, error) {
	return st.shared.sweepDeliveries(ctx, c, st.expireFailed)
}

// expireFailed deletes up to sweepBatch FAILED deliveries last tried
// before cut, and their attempts, in one transaction (sql/sqlite.sql
// expire_failed).
func (st *sqliteStore) expireFailed(ctx context.Context, cut time.Time) (int64, error) {
	return st.deleteInTx(ctx, st.q.SQL("expire_failed_attempts"), st.q.SQL("expire_failed"), cut, sweepBatch)
}

// sweepEvents deletes events oldest first by seq (their id), which
// follows time, so the scan stops at the first event young enough to
// keep; delete_old_events keeps, among the old ones, those a delivery
// without a stored body still needs (pending, or FAILED and not yet
// expired).
func (st *sqliteStore) sweepEvents(ctx context.Context, c cutoffs) (int64, error) {
	var total, from int64
	for ctx.Err() == nil {
		type age struct {
			seq int64
			at  time.Time
		}
		batch, err := sqlq.Collect(ctx, st.db, st.q.SQL("event_ages"), []any{from, sweepBatch}, func(r sqlq.Row) (age, error) {
			var a age
			err := r.Scan(&a.seq, &a.at)
			return a, err
		})
		if err != nil {
			return total, fmt.Errorf("sweep events: %w", err)
		}
		st.afterSweepRead()
		to := from
		done := len(batch) < sweepBatch
		for _, a := range batch {
			if !a.at.Before(c.old) {
				done = true
				break
			}
			to = a.seq
		}
		if to > from {
			n, err := st.db.Exec(ctx, st.q.SQL("delete_old_events"), from, to)
			if err != nil {
				return total, fmt.Errorf("sweep events: %w", err)
			}
			total += n
			from = to
		}
		if done {
			break
		}
	}
	return total, nil
}
