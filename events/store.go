package events

import (
	"context"
	"embed"
	"fmt"
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
	// sweepDeliveries deletes, oldest first, the finished deliveries (and
	// their attempts) created before c.old but those c keeps, stopping at
	// the first one young enough to keep.
	sweepDeliveries(ctx context.Context, c cutoffs) error
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
}

// sweepBatch is how many rows one sweep statement deletes at most.
const sweepBatch = 1000

// sweepDeliveries reads the deliveries oldest first by id, which follows
// their creation, and deletes the finished ones in each batch up to the
// first one young enough to keep, but the FAILED ones c keeps. Those and
// the pending ones are read again by every sweep: at most the deliveries
// of the last WEBHOOK_MAX_AGE plus WEBHOOK_FAILED_KEEP, and only with
// resends more.
func (st shared) sweepDeliveries(ctx context.Context, c cutoffs) error {
	var from int64
	for ctx.Err() == nil {
		type age struct {
			id        int64
			deletable bool
			created   time.Time
		}
		batch, err := sqlq.Collect(ctx, st.db, st.q.SQL("delivery_ages"), []any{from, sweepBatch}, func(r sqlq.Row) (age, error) {
			var a age
			var status string
			var last *time.Time
			err := r.Scan(&a.id, &status, &a.created, &last)
			a.deletable = status != "PENDING" && !c.keeps(status, a.created, last)
			return a, err
		})
		if err != nil {
			return fmt.Errorf("sweep deliveries: %w", err)
		}
		to, deletable := from, false
		done := len(batch) < sweepBatch
		for _, a := range batch {
			if !a.created.Before(c.old) {
				done = true
				break
			}
			to, deletable = a.id, deletable || a.deletable
		}
		if deletable {
			if err := st.deleteDeliveries(ctx, from, to, c); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		from = to
	}
	return nil
}

// deleteDeliveries deletes the finished deliveries with from < id <= to
// that c lets go, and their attempts, in one transaction.
func (st shared) deleteDeliveries(ctx context.Context, from, to int64, c cutoffs) error {
	err := st.db.Tx(ctx, func(tx sqlq.Runner) error {
		if _, err := tx.Exec(ctx, st.q.SQL("delete_finished_attempts"), from, to, c.old, c.failed); err != nil {
			return fmt.Errorf("sweep delivery attempts: %w", err)
		}
		_, err := tx.Exec(ctx, st.q.SQL("delete_finished_deliveries"), from, to, c.old, c.failed)
		return err
	})
	if err != nil {
		return fmt.Errorf("sweep deliveries: %w", err)
	}
	return nil
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
