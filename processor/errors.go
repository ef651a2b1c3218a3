package processor

import (
	"context"
	"errors"
	"fmt"
)

// Kind classifies a failed processor call. The classification is what
// keeps money moving at most once: a known kind is the processor's
// definite word that this request did nothing; an unknown kind says
// nothing about whether the money moved. docs/design/processors.md has the
// table of which processor answer becomes which kind.
type Kind int

// The kinds. Declined, InvalidRequest, NotFound, IdempotencyMismatch,
// Authentication and Unsupported are known; the rest are unknown.
const (
	// KindUnknownError is the zero Kind: an error nobody classified. It is
	// unknown, the safe default.
	KindUnknownError Kind = iota

	// KindDeclined (known, refused): the processor refused the payment
	// method or the operation on it (Stripe: a 402 card_error). Code is the
	// most specific code: decline_code when given, else code.
	KindDeclined
	// KindInvalidRequest (known, refused): the processor refused the
	// request as such (Stripe: 400 invalid_request_error, 404 on a write,
	// e.g. payment_intent_unexpected_state, amount_too_large); nothing
	// happened. Also a request CMPay refused to send (a bad key).
	KindInvalidRequest
	// KindNotFound (known): a read named a record the processor does not
	// have (Stripe: 404 resource_missing on a GET).
	KindNotFound
	// KindIdempotencyMismatch (known for this request only): the key was
	// first used with other parameters or on another endpoint (Stripe: 400
	// idempotency_error). This request did nothing, but the key's first
	// request stands and may have moved money: never settle the operation
	// as refused on it; read the processor's record instead.
	KindIdempotencyMismatch
	// KindAuthentication (known, not refused): the processor refused CMPay's
	// credentials (Stripe: 401, 403). Nothing happened; the operation is
	// not refused either: it waits until CMPay's API key for the processor
	// (STRIPE_API_KEY) is fixed: recovery cannot end that wait alone.
	KindAuthentication
	// KindUnsupported (known, not refused): this processor cannot do the
	// request (the sandbox has no records to search). Nothing was sent.
	KindUnsupported

	// KindTimeout (unknown): no answer before the context's deadline.
	KindTimeout
	// KindCanceled (unknown): the caller canceled the context mid-call.
	KindCanceled
	// KindNetwork (unknown): the connection failed or closed before a
	// whole answer came (refused, reset, EOF).
	KindNetwork
	// KindServerError (unknown): a 5xx. Replayed says Stripe gave it again
	// from its idempotency cache: asking again with the key gets the same
	// 500 for 24 hours, so only a read settles it.
	KindServerError
	// KindInProgress (unknown): a request with the same key is still
	// executing (Stripe: 409, or 429 lock_timeout).
	KindInProgress
	// KindRateLimited (unknown): the processor shed the request (429); it
	// was not executed, but it is no answer either: ask again later.
	KindRateLimited
	// KindBadResponse (unknown): an answer CMPay could not read (not JSON,
	// an unexpected shape, a status the processor does not document).
	KindBadResponse
)

var kindNames = map[Kind]string{
	KindUnknownError: "unknown_error", KindDeclined: "declined", KindInvalidRequest: "invalid_request",
	KindNotFound: "not_found", KindIdempotencyMismatch: "idempotency_mismatch",
	KindAuthentication: "authentication", KindUnsupported: "unsupported", KindTimeout: "timeout",
	KindCanceled: "canceled", KindNetwork: "network", KindServerError: "server_error",
	KindInProgress: "in_progress", KindRateLimited: "rate_limited", KindBadResponse: "bad_response",
}

// String is the kind's snake_case name, fit for metrics labels.
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Known says whether an error of this kind is the processor's definite
// word that the request did nothing.
func (k Kind) Known() bool {
	switch k {
	case KindDeclined, KindInvalidRequest, KindNotFound, KindIdempotencyMismatch,
		KindAuthentication, KindUnsupported:
		return true
	}
	return false
}

// Refused says whether an error of this kind settles a write as refused:
// the operation did not happen and will not under its key (a payment
// DECLINED, a capture, cancel or refund PROCESSOR_REFUSED).
func (k Kind) Refused() bool { return k == KindDeclined || k == KindInvalidRequest }

// Error is a failed processor call. Use errors.As to get it from a
// wrapped error.
type Error struct {
	Kind Kind
	// Op is the call: "create", "capture", "cancel", "refund",
	// "get_payment", "find_payments", "get_refund", "list_refunds".
	Op string
	// Code is the processor's code, if any ("card_declined",
	// "insufficient_funds", "resource_missing", ...).
	Code string
	// Message is the processor's message, if any; safe to show staff.
	Message string
	// HTTPStatus is the processor's HTTP status, 0 when none came.
	HTTPStatus int
	// Replayed says the processor gave this answer again from its
	// idempotency cache.
	Replayed bool
	// Reference is the processor's reference of the thing the request
	// made or named, when the answer gave one (a declined PaymentIntent).
	Reference string
	// RequestID is the processor's id of the request, for support.
	RequestID string
	// Err is the underlying error, if any.
	Err error
}

// Error describes the failure in one line.
func (e *Error) Error() string {
	s := fmt.Sprintf("processor %s: %s", e.Op, e.Kind)
	if e.HTTPStatus != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.HTTPStatus)
	}
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap gives the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Known says whether the processor definitely did not perform this
// request (see Kind.Known).
func (e *Error) Known() bool { return e.Kind.Known() }

// Refused says whether the error settles a write as refused (see
// Kind.Refused).
func (e *Error) Refused() bool { return e.Kind.Refused() }

// ContextKind classifies a call that ended because its context did:
// KindTimeout past the deadline, KindCanceled when canceled. ok is false
// when ctx has not ended.
func ContextKind(ctx context.Context) (k Kind, ok bool) {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return KindTimeout, true
	case ctx.Err() != nil:
		return KindCanceled, true
	}
	return 0, false
}
