// Package restjson is the one definition of how a payment and a refund look
// as JSON outside GraphQL: in the REST endpoints' answers (package httpapi)
// and in webhook deliveries (package webhooks), which must show the same
// shape.
package restjson

import (
	"time"

	"github.com/cmpay/cmpay/internal/nullable"
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

	// Processor is "sandbox" or "stripe"; ProcessorReference its id for
	// the payment, null until known.
	Processor          string  `json:"processor"`
	ProcessorReference *string `json:"processorReference"`
	// DeclineCode is a DECLINED payment's processor code, else null.
	DeclineCode *string `json:"declineCode"`
	// PendingOperation is a capture or cancel whose outcome at the
	// processor is not known yet, else null.
	PendingOperation *string `json:"pendingOperation"`
	// NextAction is what the payer of a Pix or boleto payment does, else
	// null; PaidAt and ExpiredAt when they paid or it expired.
	NextAction *NextAction `json:"nextAction"`
	PaidAt     *string     `json:"paidAt"`
	ExpiredAt  *string     `json:"expiredAt"`
}

// NextAction is what the payer of a Pix or boleto payment does, as the
// REST endpoints and webhooks show it.
type NextAction struct {
	Type       string  `json:"type"`
	PixCode    *string `json:"pixCode"`
	BoletoLine *string `json:"boletoLine"`
	HostedURL  *string `json:"hostedUrl"`
	ExpiresAt  string  `json:"expiresAt"`
}

// Refund is a refund as the REST endpoints and webhooks show it.
type Refund struct {
	ID             string  `json:"id"`
	PaymentID      string  `json:"paymentId"`
	Amount         string  `json:"amount"`
	Reason         *string `json:"reason"`
	IdempotencyKey string  `json:"idempotencyKey"`
	CreatedAt      string  `json:"createdAt"`
	// Status is PROCESSING, SUCCEEDED or FAILED; FailureCode a FAILED
	// refund's processor code, else null.
	Status      string  `json:"status"`
	FailureCode *string `json:"failureCode"`
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
		IdempotencyKey: r.IdempotencyKey, CreatedAt: Stamp(r.CreatedAt),
		Status: string(RefundStatusOf(r)), FailureCode: nullable.String(r.FailureCode)}
}

// ProcessorOf is the processor of p. A payment read without one (the zero
// value) was made before processors existed, by the sandbox, as the
// database's column default says; GraphQL and REST both show it so.
func ProcessorOf(p payments.Payment) string {
	if p.Processor == "" {
		return "sandbox"
	}
	return p.Processor
}

// RefundStatusOf is the status of r: a refund read without one was made
// before processors existed and succeeded at once (the column default).
func RefundStatusOf(r payments.Refund) payments.RefundStatus {
	if r.Status == "" {
		return payments.RefundSucceeded
	}
	return r.Status
}

// nextActionOf shows a payment's next action; nil for none.
func nextActionOf(a *payments.NextAction) *NextAction {
	if a == nil {
		return nil
	}
	return &NextAction{Type: string(a.Type), PixCode: nullable.String(a.PixCode), BoletoLine: nullable.String(a.BoletoLine),
		HostedURL: nullable.String(a.HostedURL), ExpiresAt: Stamp(a.ExpiresAt)}
}

// PaymentOf shows p with its refunds, oldest first.
func PaymentOf(p payments.Payment, refunds []payments.Refund) Payment {
	out := Payment{
		ID: p.ID, ClientID: p.ClientID, Amount: p.Amount.String(), Currency: p.Amount.Currency, Method: string(p.Method),
		IdempotencyKey: p.IdempotencyKey, CreatedAt: Stamp(p.CreatedAt),
		Status: string(p.Status), CapturedAmount: p.Captured.String(), RefundedAmount: p.Refunded.String(),
		CapturedAt: OptionalStamp(p.CapturedAt), CanceledAt: OptionalStamp(p.CanceledAt),
		Refunds:   make([]Refund, 0, len(refunds)),
		Processor: ProcessorOf(p), ProcessorReference: nullable.String(p.ProcessorReference), DeclineCode: nullable.String(p.DeclineCode),
		PendingOperation: nullable.String(string(p.PendingOperation)), NextAction: nextActionOf(p.NextAction),
		PaidAt: OptionalStamp(p.PaidAt), ExpiredAt: OptionalStamp(p.ExpiredAt),
	}
	for _, r := range refunds {
		out.Refunds = append(out.Refunds, RefundOf(r))
	}
	return out
}
