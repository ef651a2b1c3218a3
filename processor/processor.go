// Package processor is the seam between CMPay and the payment processor
// that moves the money (the built-in sandbox, or Stripe). Everything outside
// the implementations (processor/sandbox, processor/stripe) talks to a
// Processor and never learns which one runs.
//
// Every write takes an idempotency key that the caller derives from the
// operation it stored before calling (for example "cmpay_<operation id>"),
// never from a try: every try of one operation is then the same request to
// the processor, and asking again can never move money twice. (The one
// exception is the caller's: once the processor gives a stored error for
// the key, or a refund's key is older than the processor keeps keys, and
// its records show the operation not done, the operation is stored with a
// new key and sent under it; payments/resend.go.) A call ends in one of
// three ways:
//
//   - a result: the processor's state of the payment or refund;
//   - a *Error whose Known method is true: the processor answered
//     definitely that this request did not happen (a decline, an invalid
//     request, ...); see Kind for each case;
//   - any other error, or a *Error whose Known method is false: the
//     outcome is unknown. The money may or may not have moved; the caller
//     asks again later with the same key, or reads the processor's record.
//
// The engine tells them apart with errors.As and Error.Known
// (payments/operations.go, errorOutcome).
package processor

import (
	"context"
	"fmt"
	"time"
)

// Processor is one payment processor. Implementations are safe for
// concurrent use. Every method honours ctx: past its deadline a write's
// outcome is unknown (a *Error of KindTimeout).
type Processor interface {
	// Name is "sandbox" or "stripe": what Payment.processor shows.
	Name() string

	// CreatePayment asks the processor to create (and, for cards,
	// authorize, and with Capture also capture) a payment. A decline is a
	// *Error of KindDeclined carrying the decline code and, when the
	// processor made a record of it, the Reference.
	CreatePayment(ctx context.Context, req CreatePaymentRequest) (Payment, error)
	// CapturePayment captures an authorized payment, wholly or in part.
	CapturePayment(ctx context.Context, req CaptureRequest) (Payment, error)
	// CancelPayment voids an authorized payment: no money moves.
	CancelPayment(ctx context.Context, req CancelRequest) (Payment, error)
	// RefundPayment returns (part of) a captured payment. A refund the
	// processor accepted but has not finished is RefundPending.
	RefundPayment(ctx context.Context, req RefundRequest) (Refund, error)

	// GetPayment reads the processor's record of a payment by its
	// reference. A reference the processor does not know is a *Error of
	// KindNotFound.
	GetPayment(ctx context.Context, reference string) (Payment, error)
	// FindPayments searches the processor's records for the payments made
	// for one CMPay payment id: for when a create's answer was lost and its
	// reference with it. The search may lag behind the writes (Stripe: up
	// to a minute, more during outages), so an empty answer does not prove
	// that no payment was made. The answer is never nil, nil: an empty
	// slice means none found yet.
	FindPayments(ctx context.Context, paymentID string) ([]Payment, error)
	// GetRefund reads the processor's record of a refund by its reference.
	GetRefund(ctx context.Context, reference string) (Refund, error)
	// ListRefunds reads every refund of one payment, by the payment's
	// reference: for when a refund's answer was lost and its reference
	// with it.
	ListRefunds(ctx context.Context, paymentReference string) ([]Refund, error)
}

// Method is how a payment is paid: the same names as the API's.
type Method string

// The payment methods.
const (
	MethodCreditCard Method = "CREDIT_CARD"
	MethodDebitCard  Method = "DEBIT_CARD"
	MethodPix        Method = "PIX"
	MethodBoleto     Method = "BOLETO"
)

// Async says whether the method is paid by the payer after the payment is
// created (Pix, boleto), rather than authorized at once (cards).
func (m Method) Async() bool { return m == MethodPix || m == MethodBoleto }

// Valid says whether m is one of the four methods.
func (m Method) Valid() bool {
	switch m {
	case MethodCreditCard, MethodDebitCard, MethodPix, MethodBoleto:
		return true
	}
	return false
}

// CreatePaymentRequest is what CreatePayment asks for.
type CreatePaymentRequest struct {
	// IdempotencyKey is the operation's base key (see RequestKey).
	IdempotencyKey string
	// PaymentID is CMPay's payment id; the processor keeps it with its
	// record (Stripe: metadata[cmpay_payment_id]) so FindPayments finds it.
	PaymentID string
	// AmountMinor is the amount in the currency's ISO 4217 minor units
	// (1050 BRL is 10.50 BRL); implementations convert to their own unit.
	AmountMinor int64
	// Currency is the upper-case ISO 4217 code.
	Currency string
	Method   Method
	// PaymentMethodToken is the payment method at the processor (Stripe: a
	// PaymentMethod id, pm_…); empty for none.
	PaymentMethodToken string
	// Capture captures at once; false only authorizes (cards only).
	Capture bool
	// Attempt counts the earlier sends of this same operation (0 for the
	// first). Real processors ignore it: the key makes every send the same
	// request. The sandbox uses it for its slow token, whose first send
	// alone is slow (see processor/sandbox), so that it needs no memory of
	// its own and behaves the same on every instance.
	Attempt int
}

// CaptureRequest is what CapturePayment asks for.
type CaptureRequest struct {
	IdempotencyKey string
	// Reference is the processor's reference of the payment.
	Reference string
	// AmountMinor is how much to capture, at most what is authorized.
	AmountMinor int64
	// Currency is the payment's ISO 4217 code, for the processor's unit.
	Currency string
}

// CancelRequest is what CancelPayment asks for.
type CancelRequest struct {
	IdempotencyKey string
	Reference      string
}

// RefundRequest is what RefundPayment asks for.
type RefundRequest struct {
	IdempotencyKey string
	// PaymentReference is the processor's reference of the payment.
	PaymentReference string
	// RefundID is CMPay's refund id; the processor keeps it with its
	// record (Stripe: metadata[cmpay_refund_id]).
	RefundID    string
	AmountMinor int64
	// Currency is the payment's ISO 4217 code, for the processor's unit.
	Currency string
}

// RequestKind names one kind of request within an operation, for the
// operations that need more than one request at a processor.
type RequestKind string

// RequestKey is the idempotency key sent with one kind of request of an
// operation whose base key is base. The first (or only) request of an
// operation sends base itself, so what CMPay stores and shows is exactly
// what the processor got; each further kind sends base + "_" + kind (for
// a create then a confirm: "cmpay_01J…" then "cmpay_01J…_confirm"). Both
// implementations today send one request per operation, so they send base.
// Keys depend only on the stored operation and the request's kind, never
// on a try.
func RequestKey(base string, kind RequestKind) string {
	if kind == "" {
		return base
	}
	return base + "_" + string(kind)
}

// MaxKeyLen bounds a base key, leaving room under Stripe's 255 characters
// for a request kind's suffix.
const MaxKeyLen = 200

// ValidateKey checks a base idempotency key: 1 to MaxKeyLen printable
// ASCII characters. Implementations call it before sending anything, so a
// bad key is a known KindInvalidRequest with nothing sent.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("idempotency key must be 1 to %d characters, got %d", MaxKeyLen, len(key))
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return fmt.Errorf("idempotency key must be printable ASCII without spaces (byte %d)", i)
		}
	}
	return nil
}

// PaymentState is the processor's state of a payment.
type PaymentState string

// The payment states. Only Captured moved money to the merchant;
// Authorized holds it on the payer's card.
const (
	// PaymentRequiresAction: the processor waits for something CMPay does
	// not do (3-D Secure, a confirmation). No money has moved.
	PaymentRequiresAction PaymentState = "requires_action"
	// PaymentPending: created, waiting for the payer (Pix, boleto);
	// NextAction says what the payer does and until when.
	PaymentPending PaymentState = "pending"
	// PaymentProcessing: the processor accepted it and has not finished;
	// read it again later.
	PaymentProcessing PaymentState = "processing"
	// PaymentAuthorized: the amount is held, to capture or cancel.
	PaymentAuthorized PaymentState = "authorized"
	// PaymentCaptured: the money moved (CapturedMinor says how much).
	PaymentCaptured PaymentState = "captured"
	// PaymentCanceled: the authorization was voided; no money moved.
	PaymentCanceled PaymentState = "canceled"
	// PaymentDeclined: the processor refused it (DeclineCode says why).
	PaymentDeclined PaymentState = "declined"
	// PaymentExpired: a Pix or boleto the payer did not pay in time.
	PaymentExpired PaymentState = "expired"
)

// Final says whether the state can no longer change by itself or by the
// payer (a captured payment can still be refunded, but stays captured).
func (s PaymentState) Final() bool {
	switch s {
	case PaymentCaptured, PaymentCanceled, PaymentDeclined, PaymentExpired:
		return true
	}
	return false
}

// Payment is the processor's record of a payment.
type Payment struct {
	// Reference is the processor's id (Stripe: the PaymentIntent id).
	Reference string
	// PaymentID is CMPay's payment id as the processor keeps it, when it
	// does (empty in the sandbox).
	PaymentID   string
	State       PaymentState
	AmountMinor int64
	Currency    string
	// CapturedMinor is how much was captured (0 unless captured).
	CapturedMinor int64
	// DeclineCode is the processor's most specific code, when Declined
	// (Stripe: decline_code when given, else code).
	DeclineCode string
	// NextAction is what the payer does, when Pending.
	NextAction *NextAction
	// Created is when the processor made its record.
	Created time.Time
}

// NextActionType says which kind of instructions a NextAction carries.
type NextActionType string

// The next action types, named as the API names them.
const (
	NextActionPixCode NextActionType = "PIX_CODE"
	NextActionBoleto  NextActionType = "BOLETO"
)

// NextAction is what the payer of a pending Pix or boleto does.
type NextAction struct {
	Type NextActionType
	// PixCode is the Pix "copia e cola" text (PIX_CODE).
	PixCode string
	// BoletoLine is the boleto's typeable line, 47 digits (BOLETO).
	BoletoLine string
	// HostedURL is a page showing it, when the processor gives one.
	HostedURL string
	// ExpiresAt is when it stops being payable.
	ExpiresAt time.Time
}

// RefundState is the processor's state of a refund.
type RefundState string

// The refund states.
const (
	// RefundPending: accepted, still processing (Stripe: pending or
	// requires_action): the amount stays reserved.
	RefundPending RefundState = "pending"
	// RefundSucceeded: the money went back.
	RefundSucceeded RefundState = "succeeded"
	// RefundFailed: it did not happen (FailureCode says why).
	RefundFailed RefundState = "failed"
)

// Refund is the processor's record of a refund.
type Refund struct {
	// Reference is the processor's id (Stripe: the Refund id, re_…).
	Reference string
	// PaymentReference is the refunded payment's reference.
	PaymentReference string
	// RefundID is CMPay's refund id as the processor keeps it.
	RefundID    string
	State       RefundState
	AmountMinor int64
	Currency    string
	FailureCode string
	Created     time.Time
}

// CreatedLister is a Processor that also lists its payments by when it
// made them, consistently: unlike FindPayments' search, a payment made
// before the call is in the answer. Recovery uses it to prove that a
// create made no payment: one whose key's answer is a stored error, before
// sending it again under a new key (payments/resend.go), and one a day
// old, before declining it (payments/dayold.go).
type CreatedLister interface {
	// ListPaymentsCreated lists the payments made for one CMPay payment id
	// between from and to (both included, to the processor's precision).
	// The answer is never nil, nil: an empty slice means none. walk, if
	// not nil, is where the list starts (its zero value: the first page)
	// and is moved on past every page read, so that after an error it
	// holds how far the list came: given again, with the same payment id
	// and window, the list goes on from the page that failed. A walk Done
	// is answered from its Found, without a call.
	ListPaymentsCreated(ctx context.Context, paymentID string, from, to time.Time, walk *ListWalk) ([]Payment, error)
}

// ListWalk is how far a walk through a CreatedLister's list came. It is
// only good for the payment id and window it was made with, and only
// while no payment of that id can still be made in that window (recovery
// lists a create's window once every send of it has ended): a page read
// before then holds every such payment it ever will.
type ListWalk struct {
	// After is the processor's id of the last record read; "" before the
	// first page.
	After string
	// Found are the payments the pages read so far held for the id.
	Found []Payment
	// Done says the last page has been read: Found is the whole answer.
	Done bool
}

// Foreseer is a Processor some of whose answers are known before it is
// asked: a pure function of the request, given at once, with no state kept
// and no money moved anywhere (the sandbox). The engine may then ask it
// before storing anything and store the answer in the statement that
// stores the payment, where it would otherwise store first and ask second.
type Foreseer interface {
	// ForeseesCreate says whether CreatePayment answers req at once.
	ForeseesCreate(req CreatePaymentRequest) bool
	// ForeseesChanges says whether every capture, cancel and refund is
	// answered at once, with success.
	ForeseesChanges() bool
}

// AmountChecker is a Processor that cannot take every amount ISO 4217
// allows in a currency (Stripe counts a few currencies in other units).
// The engine asks it before storing anything, so that such an amount is
// the client's bad input, answered with nothing stored, not a decline.
type AmountChecker interface {
	// CheckAmount says why minor units of currency (ISO 4217's minor
	// unit) cannot be sent, or nil.
	CheckAmount(minor int64, currency string) error
}
