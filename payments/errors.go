package payments

import (
	"errors"
	"fmt"
	"strings"
)

// The errors callers branch on. Every error this package returns for a
// client's mistake or a refused operation unwraps to one of them; anything
// else is internal.
var (
	// ErrInvalidInput: the request is malformed; nothing was written.
	ErrInvalidInput = errors.New("invalid input")
	// ErrKeyReused: the idempotency key was used before for another
	// operation, payment or parameters.
	ErrKeyReused = errors.New("idempotency key reused for another request")
	// ErrNotFound: no payment has that id.
	ErrNotFound = errors.New("not found")
	// ErrStateConflict: the payment's status does not allow the operation.
	ErrStateConflict = errors.New("payment state conflict")
	// ErrAmountExceeds: the amount is more than the payment has available.
	ErrAmountExceeds = errors.New("amount exceeds what is available")
	// ErrForbidden: the request may not touch this client's payments.
	ErrForbidden = errors.New("forbidden")
)

// Problem is one thing wrong with a request, named by the API field.
type Problem struct {
	Field   string
	Message string
}

// InvalidInputError lists everything wrong with a request, so a client can
// fix it in one go.
type InvalidInputError struct {
	Problems []Problem
}

func (e *InvalidInputError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

func (e *InvalidInputError) Unwrap() error { return ErrInvalidInput }

// invalid builds an InvalidInputError about one field.
func invalid(field, format string, args ...any) *InvalidInputError {
	return &InvalidInputError{Problems: []Problem{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// KeyReusedError says which payment the key belongs to, what it was used
// for, and which fields of the new request differ.
type KeyReusedError struct {
	PaymentID       string
	Operation       Operation // the operation the key was first used for
	DifferingFields []string
}

func (e *KeyReusedError) Error() string {
	what := "for payment " + e.PaymentID
	if e.Operation != OpCreate {
		what = "for " + operationName(e.Operation) + " of payment " + e.PaymentID
	}
	return e.message(what + " ")
}

// Unnamed is Error's message without the payment the key belongs to: a
// caller that may not learn it (a payments:create token, whose guessed key
// would otherwise name another shopper's payment) still learns what differs.
func (e *KeyReusedError) Unnamed() string { return e.message("") }

// message is the refusal's text, what (ending in a space, or empty) saying
// what the key was used for.
func (e *KeyReusedError) message(what string) string {
	differs := strings.Join(e.DifferingFields, ", ")
	if differs == "" {
		// Only a key whose stored fingerprint no longer matches its
		// parameters (damaged, or written by hand) differs in nothing
		// nameable.
		differs = "request"
	}
	return fmt.Sprintf("idempotency key already used %swith a different %s; use a new key for a new request", what, differs)
}

func (e *KeyReusedError) Unwrap() error { return ErrKeyReused }

// StateConflictError: the payment's status does not allow the operation.
type StateConflictError struct {
	Operation Operation
	Status    Status
	// PendingOperation is the capture or cancel still waiting for the
	// processor, when that is what stops the operation.
	PendingOperation Operation
}

func (e *StateConflictError) Error() string {
	if e.PendingOperation != "" {
		// The status alone would read as a contradiction ("cannot capture a
		// payment that is AUTHORIZED"): what stops the request is the
		// operation still waiting for the processor.
		return fmt.Sprintf("cannot %s the payment while its %s waits for the processor's answer; it stays %s until then",
			verb(e.Operation), verb(e.PendingOperation), e.Status)
	}
	return fmt.Sprintf("cannot %s a payment that is %s", verb(e.Operation), e.Status)
}

func (e *StateConflictError) Unwrap() error { return ErrStateConflict }

// AmountExceedsError: the amount asked for is more than is available: the
// authorized amount for a capture, what is left to refund for a refund.
type AmountExceedsError struct {
	Operation Operation
	Requested Money
	Available Money
}

func (e *AmountExceedsError) Error() string {
	if e.Requested.Minor == 0 {
		return fmt.Sprintf("cannot %s: nothing is left (%s available)", verb(e.Operation), e.Available)
	}
	return fmt.Sprintf("cannot %s %s: %s available", verb(e.Operation), e.Requested, e.Available)
}

func (e *AmountExceedsError) Unwrap() error { return ErrAmountExceeds }

// operationName is an operation as the GraphQL API names it.
func operationName(op Operation) string {
	switch op {
	case OpCapture:
		return "capturePayment"
	case OpCancel:
		return "cancelPayment"
	case OpRefund:
		return "refundPayment"
	}
	return "createPayment"
}

func verb(op Operation) string {
	switch op {
	case OpCapture:
		return "capture"
	case OpCancel:
		return "cancel"
	case OpRefund:
		return "refund"
	}
	return "create"
}

// ErrProcessorRefused: the processor refused a capture, cancel or refund;
// nothing was applied, and the key stays bound to the refusal.
var ErrProcessorRefused = errors.New("the processor refused the operation")

// ProcessorRefusedError is a capture, cancel or refund the processor
// refused, with its code ("charge_already_refunded").
type ProcessorRefusedError struct {
	Operation Operation
	PaymentID string
	Code      string
	// Replayed: the request's key was used before, and this is that first
	// request's refusal answered again (REST: Idempotent-Replayed: true).
	Replayed bool
}

func (e *ProcessorRefusedError) Error() string {
	return fmt.Sprintf("the processor refused to %s payment %s: %s", verb(e.Operation), e.PaymentID, e.Code)
}

func (e *ProcessorRefusedError) Unwrap() error { return ErrProcessorRefused }

// IsReplayedRefusal reports whether err is a processor's refusal answered
// again to a request with the same key (ProcessorRefusedError.Replayed).
func IsReplayedRefusal(err error) bool {
	var refused *ProcessorRefusedError
	return errors.As(err, &refused) && refused.Replayed
}

// ErrProcessorUnavailable is what ProcessorUnavailableError unwraps to.
var ErrProcessorUnavailable = errors.New("the payment's processor is not configured on this server")

// ProcessorUnavailableError: a change to a payment made at a processor
// this server is not configured for (a Stripe payment, on a server with
// PROCESSOR=sandbox). Nothing was stored; the key stays unused, so the
// same request succeeds on a server configured for that processor.
type ProcessorUnavailableError struct {
	// Processor is the payment's processor ("stripe").
	Processor string
}

func (e *ProcessorUnavailableError) Error() string {
	return fmt.Sprintf("this payment was made at %s, which this server is not configured for (a server with PROCESSOR=%s is); nothing was done",
		e.Processor, e.Processor)
}

func (e *ProcessorUnavailableError) Unwrap() error { return ErrProcessorUnavailable }
