package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// eventColumns are what a numbered event is read with: the outbox row and,
// for a refund, the refund (immutable once made).
const eventColumns = `e.seq, e.id, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id, e.payment_key,
	e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor, e.refunded_minor,
	e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor AS refund_amount_minor, r.reason AS refund_reason, r.idempotency_key AS refund_key,
	r.created_at AS refund_created_at`

// eventRow is one row read with eventColumns.
type eventRow struct {
	models.PaymentEvent
	RefundAmountMinor *int64
	RefundReason      *string
	RefundKey         *string
	RefundCreatedAt   *time.Time
}

func (r eventRow) event() Event {
	e := Event{
		Type: Type(r.Type), At: r.At.UTC(), IdempotencyKey: r.IdempotencyKey,
		Payment: payments.EventPayment(r.PaymentEvent),
	}
	if r.ID != nil {
		e.ID = *r.ID
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

// Range reads the numbered events with after < id <= upTo that match f,
// oldest first, at most limit of them.
func (s *Service) Range(ctx context.Context, after, upTo int64, f Filter, limit int) ([]Event, error) {
	q := `SELECT ` + eventColumns + ` FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
		WHERE e.id > ? AND e.id <= ?`
	args := []any{after, upTo}
	if f.ClientID != "" {
		q += ` AND e.client_id = ?`
		args = append(args, f.ClientID)
	}
	if f.PaymentID != "" {
		q += ` AND e.payment_id = ?`
		args = append(args, f.PaymentID)
	}
	q += ` ORDER BY e.id LIMIT ?`
	args = append(args, limit)
	var rows []eventRow
	if err := s.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// Since reads up to limit numbered events after the id after, oldest first.
func (s *Service) Since(ctx context.Context, after int64, f Filter, limit int) ([]Event, error) {
	return s.Range(ctx, after, 1<<62, f, limit)
}

// Get reads the numbered events with these ids, in the order of ids;
// missing ones (swept) are left out.
func (s *Service) Get(ctx context.Context, ids []int64) ([]Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []eventRow
	err := s.db.WithContext(ctx).Raw(`SELECT `+eventColumns+` FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
		WHERE e.id IN ? ORDER BY e.id`, ids).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// maxID is the highest id given so far (0 when none).
func (s *Service) maxID(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM payment_events WHERE id IS NOT NULL`).Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("read the last event id: %w", err)
	}
	return n, nil
}
