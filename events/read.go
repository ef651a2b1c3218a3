package events

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// eventColumns are what an event is read with: the outbox row and, for a
// refund, the refund (immutable once made).
const eventColumns = `e.seq, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id, e.payment_key,
	e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor, e.refunded_minor,
	e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor AS refund_amount_minor, r.reason AS refund_reason, r.idempotency_key AS refund_key,
	r.created_at AS refund_created_at`

// The numbered events with after < id <= upTo. On PostgreSQL an event's id
// comes from the pass that numbered it: the pass's first_id plus the
// event's place in its list of seqs. Passes number ids without gaps, so
// the batches that overlap an id range are found by their last_id alone.
// On SQLite the id is the seq.
const (
	rangePostgresSQL = `SELECT b.first_id + u.o - 1 AS id, ` + eventColumns + `
		FROM event_batches b
		CROSS JOIN LATERAL unnest(b.seqs) WITH ORDINALITY AS u(seq, o)
		JOIN payment_events e ON e.seq = u.seq
		LEFT JOIN refunds r ON r.id = e.refund_id
		WHERE b.last_id > $1 AND b.first_id <= $2 AND b.first_id + u.o - 1 > $1 AND b.first_id + u.o - 1 <= $2`
	rangeSQLiteSQL = `SELECT e.seq AS id, ` + eventColumns + `
		FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
		WHERE e.seq > ? AND e.seq <= ?`
)

// eventRow is one row read with eventColumns.
type eventRow struct {
	ID int64
	models.PaymentEvent
	RefundAmountMinor *int64
	RefundReason      *string
	RefundKey         *string
	RefundCreatedAt   *time.Time
}

// targets are the fields in the order of "id, " + eventColumns.
func (r *eventRow) targets() []any {
	return []any{&r.ID, &r.Seq, &r.Type, &r.At, &r.IdempotencyKey, &r.RefundID, &r.PaymentID, &r.ClientID, &r.PaymentKey,
		&r.AmountMinor, &r.Currency, &r.Method, &r.PaymentCreatedAt, &r.Status, &r.CapturedMinor, &r.RefundedMinor,
		&r.CapturedAt, &r.CanceledAt, &r.ReplayCount, &r.RejectedCount,
		&r.RefundAmountMinor, &r.RefundReason, &r.RefundKey, &r.RefundCreatedAt}
}

// queryEvents runs a query of "id, " + eventColumns: on PostgreSQL
// straight on pgx, planned for its arguments every time (a cached generic
// plan would not know that "seq > $1" means the newest few rows, and scan
// the whole table); on SQLite through GORM.
func (s *Service) queryEvents(ctx context.Context, query string, args ...any) ([]eventRow, error) {
	var rows []eventRow
	if s.dialect != "postgres" {
		err := s.db.WithContext(ctx).Raw(query, args...).Scan(&rows).Error
		return rows, err
	}
	err := withPgx(ctx, s.sqlDB, func(c *pgx.Conn) error {
		res, err := c.Query(ctx, query, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return err
		}
		defer res.Close()
		for res.Next() {
			var r eventRow
			if err := res.Scan(r.targets()...); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return res.Err()
	})
	return rows, err
}

func (r eventRow) event() Event {
	e := Event{
		ID: r.ID, Type: payments.EventType(r.Type), At: r.At.UTC(), IdempotencyKey: r.IdempotencyKey,
		Payment: payments.EventPayment(r.PaymentEvent),
	}
	if r.RefundID != nil && r.RefundAmountMinor != nil {
		e.Refund = &payments.Refund{ID: *r.RefundID, PaymentID: r.PaymentID,
			Amount: payments.Money{Minor: *r.RefundAmountMinor, Currency: r.Currency}, Reason: r.RefundReason,
			IdempotencyKey: deref(r.RefundKey), CreatedAt: deref(r.RefundCreatedAt).UTC()}
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

// window is how many ids one read covers at most.
const window = 1000

// page reads the numbered events that match f with after < id <= upTo,
// oldest first, covering at most window ids: it returns them and the id
// it read up to (upTo, or sooner).
func (s *Service) page(ctx context.Context, after, upTo int64, f Filter) ([]Event, int64, error) {
	end := min(upTo, after+window)
	if end <= after {
		return nil, after, nil
	}
	if !payments.StorableText(f.ClientID) || !payments.StorableText(f.PaymentID) {
		// No event has such an id, and PostgreSQL would refuse it in a
		// query with an error rather than find nothing.
		return nil, end, nil
	}
	q, args, n := rangeSQLiteSQL, []any{after, end}, 3
	placeholder := func() string { return "?" }
	if s.dialect == "postgres" {
		q = rangePostgresSQL
		placeholder = func() string { n++; return fmt.Sprintf("$%d", n-1) }
	}
	if f.ClientID != "" {
		q += ` AND e.client_id = ` + placeholder()
		args = append(args, f.ClientID)
	}
	if f.PaymentID != "" {
		q += ` AND e.payment_id = ` + placeholder()
		args = append(args, f.PaymentID)
	}
	q += ` ORDER BY 1`
	rows, err := s.queryEvents(ctx, q, args...)
	if err != nil {
		return nil, after, fmt.Errorf("read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, end, nil
}

// Since reads up to limit numbered events that match f after the id
// after, oldest first.
func (s *Service) Since(ctx context.Context, after int64, f Filter, limit int) ([]Event, error) {
	top, err := s.maxID(ctx)
	if err != nil {
		return nil, err
	}
	var out []Event
	for after < top && len(out) < limit {
		batch, reached, err := s.page(ctx, after, top, f)
		if err != nil {
			return nil, err
		}
		out = append(out, batch...)
		after = reached
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// BySeq reads events by their outbox seq, for the webhook dispatcher,
// which knows each event's id from its delivery; the events it returns
// carry no id. Missing ones (swept) are left out.
func (s *Service) BySeq(ctx context.Context, seqs []int64) (map[int64]Event, error) {
	out := make(map[int64]Event, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	q := `SELECT 0 AS id, ` + eventColumns + ` FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
		WHERE e.seq = ANY($1)`
	var args []any = []any{seqs}
	if s.dialect != "postgres" {
		q = strings.Replace(q, "= ANY($1)", "IN ?", 1)
	}
	rows, err := s.queryEvents(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	for _, r := range rows {
		out[r.Seq] = r.event()
	}
	return out, nil
}

// maxID is the highest id given so far (0 when none).
func (s *Service) maxID(ctx context.Context) (int64, error) {
	q := `SELECT COALESCE(MAX(last_id), 0) FROM event_batches`
	if s.dialect != "postgres" {
		q = `SELECT COALESCE(MAX(seq), 0) FROM payment_events`
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(q).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("read the last event id: %w", err)
	}
	return n, nil
}
