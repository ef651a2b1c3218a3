package events

import (
	"context"
	"embed"
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// store is the seam between the Service and a database: everything that
// differs between PostgreSQL (store_postgres.go, sequencer_postgres.go)
// and SQLite (store_sqlite.go). The Service decides what is read, numbered
// and swept; a store how, on its dialect. One test suite runs against both
// implementations (store_test.go).
type store interface {
	// lastID is the highest id given so far (0 when none).
	lastID(ctx context.Context) (int64, error)
	// numbered reads the numbered events with after < id <= upTo that f
	// matches, oldest first. f's ids must be storable text.
	numbered(ctx context.Context, after, upTo int64, f Filter) ([]Event, error)
	// bySeq reads events by their outbox seq, keyed by it; they carry no
	// id. Missing ones (swept) are left out.
	bySeq(ctx context.Context, seqs []int64) (map[int64]Event, error)
	// sequence numbers committed events, creates their webhook deliveries
	// and tells to of them, until ctx ends (see the package comment).
	sequence(ctx context.Context, to sequencing)
	// sweepDeliveries deletes the finished deliveries (and their
	// attempts) created before c.old but the FAILED ones last tried at or
	// after c.failed, without reading those (store.go's shared).
	sweepDeliveries(ctx context.Context, c cutoffs) (deliverySweep, error)
	// sweepEvents deletes the events older than c.old but those Sweep
	// keeps, and says how many it deleted.
	sweepEvents(ctx context.Context, c cutoffs) (int64, error)
}

// newStore is the store for db's dialect.
func newStore(db *gorm.DB) (store, error) {
	return sqlq.Pick[store](db, newPostgresStore, newSQLiteStore)
}

// The statements, in sql/*.sql: common.sql holds those both dialects run
// as written.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// shared runs what both dialects run alike, with their own statements
// (the files common.sql and the dialect's).
type shared struct {
	db sqlq.DB
	q  sqlq.Statements
	// sweepRead, set by tests only, runs each time the events sweep has
	// read which events are old, before it deletes them: where a change
	// made by another transaction meets the sweep's decision.
	sweepRead *atomic.Pointer[func()]
}

// newShared is what both stores share, with the statements of dialect's
// file beside common.sql's.
func newShared(db sqlq.DB, dialect string) shared {
	return shared{db: db, q: sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/"+dialect+".sql"), sweepRead: new(atomic.Pointer[func()])}
}

// afterSweepRead runs sweepRead, if set.
func (st shared) afterSweepRead() {
	if f := st.sweepRead.Load(); f != nil {
		(*f)()
	}
}

// sweepBatch is how many rows one sweep statement deletes at most.
const sweepBatch = 1000

// deliverySweep says what one sweep of the deliveries did: how many rows
// its walk read, how many deliveries it deleted, and whether its walk
// stopped because another sweep moved the frontier meanwhile.
type deliverySweep struct {
	read, deleted int64
	yielded       bool
}

// sweepDeliveries deletes the finished deliveries (and their attempts)
// that the retention and the keep let go, in three ways, none of which
// reads a kept FAILED delivery before its keep is over:
//   - a walk by id (which follows creation) from the frontier saved by
//     the last sweep, up to the first delivery young enough to keep,
//     deleting the DELIVERED and CANCELED ones; the frontier then moves
//     up to the first pending one not resent, past every FAILED one and
//     every resent one, and is saved after each batch;
//   - expire takes the FAILED deliveries whose keep is over, through an
//     index of the FAILED ones by their last attempt, in batches;
//   - the deliveries behind the frontier that changed after the walk
//     passed them: resent, then delivered or cancelled (an index of the
//     resent ones), or cancelled with their endpoint (the index of the
//     FAILED and CANCELED ones).
func (st shared) sweepDeliveries(ctx context.Context, c cutoffs, expire func(context.Context, time.Time) (int64, error)) (deliverySweep, error) {
	var done deliverySweep
	var stored, start int64
	if err := st.db.QueryRow(ctx, st.q.SQL("delivery_sweep_frontier")).Scan(&stored, &start); err != nil {
		return done, fmt.Errorf("sweep deliveries: read the frontier: %w", err)
	}
	frontier, err := st.walkDeliveries(ctx, c, stored, start, &done)
	if err != nil {
		return done, err
	}
	for ctx.Err() == nil {
		n, err := expire(ctx, c.failed)
		if err != nil {
			return done, fmt.Errorf("sweep failed deliveries: %w", err)
		}
		done.deleted += n
		if n < sweepBatch {
			break
		}
	}
	for _, names := range [][2]string{
		{st.q.SQL("delete_resent_behind_attempts"), st.q.SQL("delete_resent_behind")},
		{st.q.SQL("delete_canceled_behind_attempts"), st.q.SQL("delete_canceled_behind")},
	} {
		n, err := st.deleteInTx(ctx, names[0], names[1], frontier, c.old)
		if err != nil {
			return done, fmt.Errorf("sweep deliveries behind the frontier: %w", err)
		}
		done.deleted += n
	}
	return done, nil
}

// walkDeliveries reads the deliveries after the frontier from, oldest
// first, and deletes the finished ones in each batch up to the first one
// young enough to keep. It returns the new frontier: the last delivery
// read before the first pending one (a pending one may yet be delivered,
// and must then be met again), never past one young enough to keep. A
// resent one still pending does not hold it: behind the frontier, the
// resent deliveries are found through their own index once delivered or
// cancelled, and expired with the FAILED ones if they fail again; held
// there, the frontier would make every sweep read again the kept FAILED
// deliveries after it while the resend retries (up to WEBHOOK_MAX_AGE).
//
// The frontier is saved after each batch that moved it, once that
// batch's deletes are committed, replacing stored (the one saved when
// the walk began, which from may be below: see delivery_sweep_frontier):
// a walk stopped part way (a shutdown, a crash, a timeout) leaves its
// progress for the next sweep, which would otherwise walk the whole
// table again, and might never reach its end. A walk whose save finds
// the frontier moved by another sweep stops there, that one walking on.
func (st shared) walkDeliveries(ctx context.Context, c cutoffs, stored, from int64, done *deliverySweep) (int64, error) {
	frontier, pending := from, false
	for ctx.Err() == nil {
		type age struct {
			id      int64
			status  string
			created time.Time
			resent  bool
		}
		batch, err := sqlq.Collect(ctx, st.db, st.q.SQL("delivery_ages"), []any{from, sweepBatch}, func(r sqlq.Row) (age, error) {
			var a age
			err := r.Scan(&a.id, &a.status, &a.created, &a.resent)
			return a, err
		})
		if err != nil {
			return frontier, fmt.Errorf("sweep deliveries: %w", err)
		}
		done.read += int64(len(batch))
		to, deletable := from, false
		end := len(batch) < sweepBatch
		for _, a := range batch {
			if !a.created.Before(c.old) {
				end = true
				break
			}
			to = a.id
			deletable = deletable || a.status == "DELIVERED" || a.status == "CANCELED"
			pending = pending || (a.status == "PENDING" && !a.resent)
			if !pending {
				frontier = a.id
			}
		}
		if deletable {
			n, err := st.deleteDeliveries(ctx, from, to, c.old)
			if err != nil {
				return frontier, err
			}
			done.deleted += n
		}
		if frontier != stored {
			moved, err := st.moveFrontier(ctx, stored, frontier)
			if err != nil {
				return frontier, err
			}
			if !moved {
				done.yielded = true
				break
			}
			stored = frontier
		}
		if end {
			break
		}
		from = to
	}
	return frontier, nil
}

// moveFrontier saves the deliveries sweep's frontier to, if it still is
// from, and says whether it did: of two sweeps at once (a leader handing
// over), the one that finds it moved leaves it to the other.
func (st shared) moveFrontier(ctx context.Context, from, to int64) (bool, error) {
	n, err := st.db.Exec(ctx, st.q.SQL("move_delivery_sweep_frontier"), from, to)
	if err != nil {
		return false, fmt.Errorf("sweep deliveries: move the frontier: %w", err)
	}
	return n > 0, nil
}

// deleteDeliveries deletes the DELIVERED and CANCELED deliveries with
// from < id <= to created before old, and their attempts, in one
// transaction.
func (st shared) deleteDeliveries(ctx context.Context, from, to int64, old time.Time) (int64, error) {
	n, err := st.deleteInTx(ctx, st.q.SQL("delete_finished_attempts"), st.q.SQL("delete_finished_deliveries"), from, to, old)
	if err != nil {
		return 0, fmt.Errorf("sweep deliveries: %w", err)
	}
	return n, nil
}

// deleteInTx runs the statement attempts, then deliveries, with args, in
// one transaction, and says how many rows deliveries deleted.
func (st shared) deleteInTx(ctx context.Context, attempts, deliveries string, args ...any) (int64, error) {
	var n int64
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		if _, err := tx.Exec(ctx, attempts, args...); err != nil {
			return err
		}
		var err error
		n, err = tx.Exec(ctx, deliveries, args...)
		return err
	})
	return n, err
}

// lastID runs the dialect's last_id.
func (st shared) lastID(ctx context.Context) (int64, error) {
	var n int64
	if err := st.db.QueryRow(ctx, st.q.SQL("last_id")).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the last event id: %w", err)
	}
	return n, nil
}

// eventRow is one row of a query of events: the id, the outbox row and,
// for a refund, the refund (its status as it is now, with the times that
// say what it was at the event: payments.RefundAsOf), in the order every
// such statement lists them.
type eventRow struct {
	ID int64
	models.PaymentEvent
	RefundAmountMinor *int64
	RefundReason      *string
	RefundKey         *string
	RefundCreatedAt   *time.Time
	RefundStatus      *string
	RefundFailureCode *string
	RefundSettledAt   *time.Time
	RefundReturnedAt  *time.Time
	// The payment's processor columns, read from the payment itself: each
	// is set once (a reference when the processor first answers, a decline
	// code with the final DECLINED), and no event is written before that,
	// so they are what they were when the event was.
	Processor          string
	ProcessorReference *string
	DeclineCode        *string
	PaymentMethodToken *string
	// A Pix or boleto's next action, likewise set once, with the create's
	// answer.
	NextActionType, PixCode, BoletoLine, HostedURL *string
	NextActionExpiresAt                            *time.Time
	// When a Pix or boleto was paid or expired: shown only by the events
	// of the payment from then on (their status says so), so that an
	// earlier event's payment is as it was.
	PaidAt, ExpiredAt *time.Time
}

// scanEvent reads one row of a query of events.
func scanEvent(row sqlq.Row) (eventRow, error) {
	var r eventRow
	err := row.Scan(&r.ID, &r.Seq, &r.Type, &r.At, &r.IdempotencyKey, &r.RefundID, &r.PaymentID, &r.ClientID, &r.PaymentKey,
		&r.AmountMinor, &r.Currency, &r.Method, &r.PaymentCreatedAt, &r.Status, &r.CapturedMinor, &r.RefundedMinor,
		&r.CapturedAt, &r.CanceledAt, &r.ReplayCount, &r.RejectedCount,
		&r.RefundAmountMinor, &r.RefundReason, &r.RefundKey, &r.RefundCreatedAt, &r.RefundStatus, &r.RefundFailureCode,
		&r.RefundSettledAt, &r.RefundReturnedAt,
		&r.Processor, &r.ProcessorReference, &r.DeclineCode, &r.PaymentMethodToken,
		&r.NextActionType, &r.PixCode, &r.BoletoLine, &r.HostedURL, &r.NextActionExpiresAt, &r.PaidAt, &r.ExpiredAt)
	return r, err
}

// readEvents runs query, a query of events, and returns them in its order.
func readEvents(ctx context.Context, db sqlq.Runner, query string, args ...any) ([]Event, error) {
	rows, err := sqlq.Collect(ctx, db, query, args, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// readBySeq runs query, a query of events by seq, and keys them by it.
func readBySeq(ctx context.Context, db sqlq.Runner, query string, args ...any) (map[int64]Event, error) {
	out := map[int64]Event{}
	err := db.Query(ctx, query, args, func(row sqlq.Row) error {
		r, err := scanEvent(row)
		if err != nil {
			return err
		}
		out[r.Seq] = r.event()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}

func (r eventRow) event() Event {
	e := Event{
		ID: r.ID, Type: payments.EventType(r.Type), At: r.At.UTC(), IdempotencyKey: r.IdempotencyKey,
		Payment: payments.EventPayment(r.PaymentEvent),
	}
	e.Payment.Processor, e.Payment.ProcessorReference = r.Processor, deref(r.ProcessorReference)
	e.Payment.DeclineCode, e.Payment.PaymentMethodToken = deref(r.DeclineCode), deref(r.PaymentMethodToken)
	if r.NextActionType != nil && r.NextActionExpiresAt != nil {
		e.Payment.NextAction = &payments.NextAction{Type: payments.NextActionType(*r.NextActionType), PixCode: deref(r.PixCode),
			BoletoLine: deref(r.BoletoLine), HostedURL: deref(r.HostedURL), ExpiresAt: r.NextActionExpiresAt.UTC()}
	}
	switch st := e.Payment.Status; {
	case r.PaidAt != nil && st != payments.StatusPending && st != payments.StatusExpired:
		e.Payment.PaidAt = r.PaidAt.UTC()
	case r.ExpiredAt != nil && st == payments.StatusExpired:
		e.Payment.ExpiredAt = r.ExpiredAt.UTC()
	}
	if r.RefundID != nil && r.RefundAmountMinor != nil {
		// The refund as the event left it: a PAYMENT_REFUNDED whose refund
		// the payer's bank returned later still says SUCCEEDED, as its
		// payment's refunds do.
		row := models.Refund{ID: *r.RefundID, PaymentID: r.PaymentID, AmountMinor: *r.RefundAmountMinor,
			Reason: r.RefundReason, IdempotencyKey: deref(r.RefundKey), CreatedAt: deref(r.RefundCreatedAt),
			Status: deref(r.RefundStatus), FailureCode: r.RefundFailureCode, SettledAt: r.RefundSettledAt,
			ReturnedAt: r.RefundReturnedAt}
		refund, ok := payments.RefundAsOf(row, r.Currency, e.At)
		if !ok { // made after its own event: stamped by a clock that was ahead
			refund = payments.RefundFromRow(row, r.Currency)
		}
		e.Refund = &refund
	}
	return e
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
