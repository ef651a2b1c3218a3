package payments

import "time"

// Method is how a payment is paid.
type Method string

const (
	MethodCreditCard Method = "CREDIT_CARD"
	MethodDebitCard  Method = "DEBIT_CARD"
	MethodPix        Method = "PIX"
	MethodBoleto     Method = "BOLETO"
)

// Methods lists every method, in the order the API documents them.
var Methods = []Method{MethodCreditCard, MethodDebitCard, MethodPix, MethodBoleto}

// Valid reports whether m is one of Methods.
func (m Method) Valid() bool {
	switch m {
	case MethodCreditCard, MethodDebitCard, MethodPix, MethodBoleto:
		return true
	}
	return false
}

// async says whether m is paid by the payer after the payment is created.
func (m Method) async() bool { return m == MethodPix || m == MethodBoleto }

// Status is where a payment is in its life.
type Status string

const (
	// StatusAuthorized: created with capture false; waits for a capture or a cancel.
	StatusAuthorized Status = "AUTHORIZED"
	// StatusCaptured: created captured (the default), or captured later.
	StatusCaptured Status = "CAPTURED"
	// StatusPartiallyRefunded: 0 < refunded < captured.
	StatusPartiallyRefunded Status = "PARTIALLY_REFUNDED"
	// StatusRefunded: refunded = captured.
	StatusRefunded Status = "REFUNDED"
	// StatusCanceled: an authorization canceled before capture.
	StatusCanceled Status = "CANCELED"
	// StatusProcessing: the processor was asked to create the payment and
	// its answer is not known yet; CMPay resolves it.
	StatusProcessing Status = "PROCESSING"
	// StatusDeclined: the processor refused the payment; no money moved;
	// final.
	StatusDeclined Status = "DECLINED"
	// StatusPending: created at the processor, waiting for the payer (Pix,
	// boleto): NextAction says what the payer does.
	StatusPending Status = "PENDING"
	// StatusExpired: the payer did not pay before NextAction.ExpiresAt; no
	// money moved; final.
	StatusExpired Status = "EXPIRED"
)

// Statuses lists every status, in the order of a payment's life.
var Statuses = []Status{StatusProcessing, StatusPending, StatusAuthorized, StatusCaptured, StatusPartiallyRefunded,
	StatusRefunded, StatusCanceled, StatusDeclined, StatusExpired}

// Valid reports whether st is one of Statuses.
func (st Status) Valid() bool {
	switch st {
	case StatusAuthorized, StatusCaptured, StatusPartiallyRefunded, StatusRefunded, StatusCanceled,
		StatusProcessing, StatusDeclined, StatusPending, StatusExpired:
		return true
	}
	return false
}

// Operation is what a request asks to do to a payment. Every operation
// takes an idempotency key; a client's keys are one namespace shared by
// all operations.
type Operation string

const (
	OpCreate  Operation = "CREATE_PAYMENT"
	OpCapture Operation = "CAPTURE_PAYMENT"
	OpCancel  Operation = "CANCEL_PAYMENT"
	OpRefund  Operation = "REFUND_PAYMENT"
)

// Operations lists every operation.
var Operations = []Operation{OpCreate, OpCapture, OpCancel, OpRefund}

// Outcome is what became of one request made with an idempotency key.
type Outcome string

const (
	// OutcomeCreated: the request created the payment.
	OutcomeCreated Outcome = "CREATED"
	// OutcomeApplied: a capture, cancel or refund took effect.
	OutcomeApplied Outcome = "APPLIED"
	// OutcomeReplayed: same key, same operation and parameters; the first
	// result was returned and nothing was done again.
	OutcomeReplayed Outcome = "REPLAYED"
	// OutcomeRejected: same key, another operation or parameters; refused
	// with IDEMPOTENCY_KEY_REUSED, nothing done.
	OutcomeRejected Outcome = "REJECTED"
	// OutcomeRefused: a business rule (the payment's status, the amount
	// available) refused the operation, nothing done, the key stays unused;
	// or the processor refused a capture, cancel or refund, or failed a
	// refund (Attempt.Refusal PROCESSOR_REFUSED), nothing applied, the key
	// bound to that refusal.
	OutcomeRefused Outcome = "REFUSED"
)

// Outcomes lists every outcome.
var Outcomes = []Outcome{OutcomeCreated, OutcomeApplied, OutcomeReplayed, OutcomeRejected, OutcomeRefused}

// Payment is a payment as the API shows it.
type Payment struct {
	ID             string
	ClientID       string
	Amount         Money
	Method         Method
	IdempotencyKey string
	CreatedAt      time.Time

	Status Status
	// Captured is what was captured: zero while authorized or canceled.
	Captured Money
	// Refunded is the sum of the payment's refunds.
	Refunded Money
	// CapturedAt and CanceledAt are when the payment was captured or
	// canceled; zero when it was not.
	CapturedAt time.Time
	CanceledAt time.Time

	// ReplayCount and RejectedCount count the requests, of any operation,
	// that replayed one of the payment's keys or reused one for another
	// payload.
	ReplayCount   int
	RejectedCount int

	// Processor is the processor that moves the payment's money: "sandbox"
	// or "stripe" (every payment made before processors existed:
	// "sandbox"). ProcessorReference is its id there (Stripe: the
	// PaymentIntent's), empty until known.
	Processor          string
	ProcessorReference string
	// DeclineCode is, for a DECLINED payment, the processor's most
	// specific code ("card_declined", "insufficient_funds").
	DeclineCode string
	// PendingOperation is a capture or cancel sent to the processor whose
	// outcome is not known yet; empty when none is.
	PendingOperation Operation
	// PaymentMethodToken is the paymentMethodToken the create sent, ""
	// for none.
	PaymentMethodToken string
	// Reserved is what refunds still PROCESSING hold of what may be
	// refunded.
	Reserved Money
	// NextAction is, for a Pix or boleto payment, what the payer does and
	// until when; nil for the others.
	NextAction *NextAction
	// PaidAt is when the payer paid a Pix or boleto payment; ExpiredAt
	// when it expired unpaid; zero otherwise.
	PaidAt    time.Time
	ExpiredAt time.Time
	// AsOf is, for the payment an event carries, the event's time: its
	// refunds, attempts and processor calls are read as they stood then
	// (asof.go). Zero for a payment read as it is now.
	AsOf time.Time
}

// NextActionType is the kind of thing a payer does to pay.
type NextActionType string

// The next actions.
const (
	NextActionPixCode NextActionType = "PIX_CODE"
	NextActionBoleto  NextActionType = "BOLETO"
)

// NextAction is what the payer of a Pix or boleto payment does.
type NextAction struct {
	Type NextActionType
	// PixCode is the Pix "copia e cola" text (a QR code carries the same).
	PixCode string
	// BoletoLine is the boleto's typeable line (linha digitável).
	BoletoLine string
	// HostedURL is a page where the payer sees it, if the processor gives one.
	HostedURL string
	ExpiresAt time.Time
}

// Flagged reports whether one of the payment's keys was replayed or rejected.
func (p Payment) Flagged() bool { return p.ReplayCount > 0 || p.RejectedCount > 0 }

// inFlight says whether p has work at its processor that is not settled:
// its create (PROCESSING, or a Pix or boleto PENDING its payer), a capture
// or cancel pending, a refund's amount reserved. The keys of such a
// payment are kept past their TTL (settleHeld, heldChange, sweep_keys):
// forgetting one would let a retry start a second charge. The SQL says the
// same in common.sql's payment_in_flight.
func (p Payment) inFlight() bool {
	return p.Status == StatusProcessing || p.Status == StatusPending || p.PendingOperation != "" || p.Reserved.Minor > 0
}

// Refundable is what may still be refunded: captured less refunded, less
// what refunds in flight hold.
func (p Payment) Refundable() Money {
	return Money{Minor: p.Captured.Minor - p.Refunded.Minor - p.Reserved.Minor, Currency: p.Amount.Currency}
}

// Refund is money given back from a captured payment.
type Refund struct {
	ID             string
	PaymentID      string
	Amount         Money
	Reason         *string
	IdempotencyKey string
	CreatedAt      time.Time
	// Status is PROCESSING until the processor says the refund succeeded
	// or failed; FailureCode is a FAILED refund's processor code.
	Status      RefundStatus
	FailureCode string
	// ReturnedAt is when the processor failed the refund after it had
	// succeeded (the payer's bank returned it); zero for any other.
	ReturnedAt time.Time
}

// RefundStatus is where a refund is at the processor.
type RefundStatus string

// The refund statuses.
const (
	RefundProcessing RefundStatus = "PROCESSING"
	RefundSucceeded  RefundStatus = "SUCCEEDED"
	RefundFailed     RefundStatus = "FAILED"
)

// ProcessorCall is one call CMPay made to the processor for a payment: a
// write (create, capture, cancel, refund), or a read made to resolve an
// operation, listed under that operation.
type ProcessorCall struct {
	Operation Operation
	// Kind says whether the call sent the operation (CallWrite) or read
	// the processor's record of it (CallRead): a read moves no money.
	Kind CallKind
	// ProcessorKey is the idempotency key CMPay sent: the same for every
	// try of one operation, until the processor's stored error for it (or,
	// for a refund, the key's age) makes recovery send it again under a
	// new one (resend.go).
	ProcessorKey string
	Outcome      CallOutcome
	// Code is the processor's error or decline code, if any.
	Code string
	// RecordState is the state the processor's answer gave its record, in
	// its own words (processor.PaymentState, processor.RefundState: for a
	// read, what it found); "" when the answer held none or was stored
	// before it was kept.
	RecordState string
	At          time.Time
	Duration    time.Duration
}

// CallKind is whether a processor call sent an operation or read the
// processor's record of it.
type CallKind string

// The kinds of processor call.
const (
	// CallWrite sent the operation (with its idempotency key).
	CallWrite CallKind = "WRITE"
	// CallRead read the processor's record to learn what came of it.
	CallRead CallKind = "READ"
)

// CallOutcome is what one processor call came to.
type CallOutcome string

// The call outcomes.
const (
	// CallSucceeded: the processor answered with its record.
	CallSucceeded CallOutcome = "SUCCEEDED"
	// CallDeclined: the processor refused (a decline, a refusal).
	CallDeclined CallOutcome = "DECLINED"
	// CallUnknown: no answer that settles it (a timeout, a 5xx, 409, 429).
	CallUnknown CallOutcome = "UNKNOWN"
	// CallError: a definite error that does not settle the operation (an
	// authentication error, a record not found).
	CallError CallOutcome = "ERROR"
)

// Attempt is one request made against a payment: with the key that created
// it, or with the key of a capture, cancel or refund.
type Attempt struct {
	Operation      Operation
	IdempotencyKey string
	Outcome        Outcome
	At             time.Time
	// DifferingFields names, for a rejected attempt, the fields whose
	// values differed from the request that first used the key: operation,
	// paymentId, amount, currency, method, capture, reason.
	DifferingFields []string
	// Refusal is, for a refused attempt, the rule that refused it:
	// PAYMENT_STATE_CONFLICT or AMOUNT_EXCEEDS_AVAILABLE, or
	// PROCESSOR_REFUSED for the processor's refusal.
	Refusal string
	// Params is what the request asked for (canonical values: amounts as
	// decimal text), and Held, for a rejected attempt, what the key's first
	// request asked for.
	Params Params
	Held   Params
	// RefundID is the refund an applied or replayed refund request got.
	RefundID string
	// Transport is the API the request came through: graphql, rest or
	// admin; Actor, for the admin, the staff member who made it.
	Transport string
	Actor     string
}
