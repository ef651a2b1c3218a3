package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// The outbox. Every change of a payment writes one event row in the same
// statement (PostgreSQL: the "*_event" CTEs of sql/create_batch.sql and
// sql/change_batch.sql, fed by what the change itself writes) or the
// same transaction (SQLite: insertEvent below, sql/sqlite.sql's
// insert_event, called from store_sqlite.go's steps) as the change: a create, capture, cancel or
// refund that applies writes exactly one; a replay, a rejection or a
// refusal writes none, since it changes nothing. The event stores the
// payment as the change left it. Package events numbers the rows and
// delivers them.

// EventType is what happened to a payment.
type EventType string

const (
	EventCreated  EventType = "PAYMENT_CREATED"
	EventCaptured EventType = "PAYMENT_CAPTURED"
	EventCanceled EventType = "PAYMENT_CANCELED"
	EventRefunded EventType = "PAYMENT_REFUNDED"
	// EventDeclined: the processor declined a payment's creation.
	EventDeclined EventType = "PAYMENT_DECLINED"
	// EventRefundFailed: the processor failed a refund; its amount is
	// released.
	EventRefundFailed EventType = "PAYMENT_REFUND_FAILED"
	// EventPending: a Pix or boleto payment was created and waits for the
	// payer.
	EventPending EventType = "PAYMENT_PENDING"
	// EventExpired: a Pix or boleto payment expired unpaid.
	EventExpired EventType = "PAYMENT_EXPIRED"
)

// EventTypes lists every event type.
var EventTypes = []EventType{EventCreated, EventCaptured, EventCanceled, EventRefunded, EventDeclined, EventRefundFailed,
	EventPending, EventExpired}

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool {
	switch t {
	case EventCreated, EventCaptured, EventCanceled, EventRefunded, EventDeclined, EventRefundFailed, EventPending, EventExpired:
		return true
	}
	return false
}

// eventTypeOf is the event an applied operation writes (the same mapping
// change_batch.sql spells in SQL).
func eventTypeOf(op Operation) EventType {
	switch op {
	case OpCreate:
		return EventCreated
	case OpCapture:
		return EventCaptured
	case OpCancel:
		return EventCanceled
	case OpRefund:
		return EventRefunded
	}
	panic(fmt.Sprintf("no event for operation %q", op))
}

// insertEvent writes an event of type typ in transaction r (SQLite's
// steps; the settling of a processor operation on both): key is the
// request's key, p the payment right after the change, refund a refund's
// refund. The columns are models.PaymentEvent's.
func insertEvent(ctx context.Context, r sqlq.Runner, typ EventType, key string, p Payment, refund *Refund, now time.Time) error {
	var refundID *string
	if refund != nil {
		refundID = &refund.ID
	}
	_, err := r.Exec(ctx, commonSQL.SQL("insert_event"),
		string(typ), now, key, refundID, p.ID, p.ClientID,
		p.IdempotencyKey, p.Amount.Minor, p.Amount.Currency, string(p.Method), p.CreatedAt, string(p.Status),
		p.Captured.Minor, p.Refunded.Minor, nullable.Time(p.CapturedAt), nullable.Time(p.CanceledAt),
		p.ReplayCount, p.RejectedCount)
	if err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	return nil
}

// EventPayment is the payment an event row recorded: the payment right
// after the event, as of the event's time.
func EventPayment(row models.PaymentEvent) Payment {
	p := paymentFromRow(models.Payment{
		ID: row.PaymentID, ClientID: row.ClientID, IdempotencyKey: row.PaymentKey,
		AmountMinor: row.AmountMinor, Currency: row.Currency, Method: row.Method, CreatedAt: row.PaymentCreatedAt,
		Status: row.Status, CapturedMinor: row.CapturedMinor, RefundedMinor: row.RefundedMinor,
		CapturedAt: row.CapturedAt, CanceledAt: row.CanceledAt,
		ReplayCount: row.ReplayCount, RejectedCount: row.RejectedCount,
	})
	p.AsOf = row.At.UTC()
	return p
}

// RefundFromRow reads a refund row of a payment in currency.
func RefundFromRow(row models.Refund, currency string) Refund { return refundFromRow(row, currency) }

// createdEvent is the event a payment created in status st announces
// (create_batch.sql's "claimed" says the same in SQL): none while
// PROCESSING.
func createdEvent(st Status) (EventType, bool) {
	switch st {
	case StatusProcessing:
		return "", false
	case StatusDeclined:
		return EventDeclined, true
	case StatusPending:
		return EventPending, true
	}
	return EventCreated, true
}
