// Package restjson is the one definition of how a payment and a refund look
// as JSON outside GraphQL: in the REST endpoints' answers (package httpapi)
// and in webhook deliveries (package webhooks), which must show the same
// shape.
package restjson

import (
	"time"

	"github.com/cmpay/cmpay/payments"
)

// Payment is a payment as the REST endpoints and webhooks show it.
type Payment struct {
	ID             string   `json:"id"`
	ClientID       string   `json:"clientId"`
	Amount         string   `json:"amount"`
	Currency       string   `json:"currency"`
	Method         string   `json:"method"`
	IdempotencyKey string   `json:"idempotencyKey"`
	CreatedAt      string   `json:"createdAt"`
	Status         string   `json:"status"`
	CapturedAmount string   `json:"capturedAmount"`
	RefundedAmount string   `json:"refundedAmount"`
	CapturedAt     *string  `json:"capturedAt"`
	CanceledAt     *string  `json:"canceledAt"`
	Refunds        []Refund `json:"refunds"`
}

// Refund is a refund as the REST endpoints and webhooks show it.
type Refund struct {
	ID             string  `json:"id"`
	PaymentID      string  `json:"paymentId"`
	Amount         string  `json:"amount"`
	Reason         *string `json:"reason"`
	IdempotencyKey string  `json:"idempotencyKey"`
	CreatedAt      string  `json:"createdAt"`
}

// Stamp is how times are written: RFC 3339 in UTC, to the microsecond
// stored.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// OptionalStamp is Stamp, or nil for the zero time.
func OptionalStamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Stamp(t)
	return &s
}

// RefundOf shows a refund.
func RefundOf(r payments.Refund) Refund {
	return Refund{ID: r.ID, PaymentID: r.PaymentID, Amount: r.Amount.String(), Reason: r.Reason,
		IdempotencyKey: r.IdempotencyKey, CreatedAt: Stamp(r.CreatedAt)}
}

// PaymentOf shows p with its refunds, oldest first.
func PaymentOf(p payments.Payment, refunds []payments.Refund) Payment {
	out := Payment{
		ID: p.ID, ClientID: p.ClientID, Amount: p.Amount.String(), Currency: p.Amount.Currency, Method: string(p.Method),
		IdempotencyKey: p.IdempotencyKey, CreatedAt: Stamp(p.CreatedAt),
		Status: string(p.Status), CapturedAmount: p.Captured.String(), RefundedAmount: p.Refunded.String(),
		CapturedAt: OptionalStamp(p.CapturedAt), CanceledAt: OptionalStamp(p.CanceledAt),
		Refunds: make([]Refund, 0, len(refunds)),
	}
	for _, r := range refunds {
		out.Refunds = append(out.Refunds, RefundOf(r))
	}
	return out
}
