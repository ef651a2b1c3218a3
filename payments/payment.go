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

// Outcome is what became of one request made with an idempotency key.
type Outcome string

const (
	// OutcomeCreated: the request created the payment.
	OutcomeCreated Outcome = "CREATED"
	// OutcomeReplayed: same key, same payload; the payment was returned.
	OutcomeReplayed Outcome = "REPLAYED"
	// OutcomeRejected: same key, different payload; refused.
	OutcomeRejected Outcome = "REJECTED"
)

// Payment is a payment as the API shows it.
type Payment struct {
	ID             string
	ClientID       string
	Amount         Money
	Method         Method
	IdempotencyKey string
	CreatedAt      time.Time
	ReplayCount    int
	RejectedCount  int
}

// Flagged reports whether the payment's key was replayed or rejected.
func (p Payment) Flagged() bool { return p.ReplayCount > 0 || p.RejectedCount > 0 }

// Attempt is one request made with a payment's idempotency key.
type Attempt struct {
	Outcome Outcome
	At      time.Time
	// DifferingFields names, for a rejected attempt, the payload fields
	// whose values differed from the payment's (amount, currency, method).
	DifferingFields []string
	// Attempted is, for a rejected attempt, the payload it asked for.
	Attempted *AttemptedPayload
	// Transport is the API the request came through: "graphql" or "rest".
	Transport string
}

// AttemptedPayload is what a rejected request asked for.
type AttemptedPayload struct {
	Amount Money
	Method Method
}
