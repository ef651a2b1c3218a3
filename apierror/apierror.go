// Package apierror is the one place an error becomes what an API client
// sees: a code for extensions.code (GraphQL) or the problem's code (REST),
// an HTTP status, a message and details. Domain errors keep their meaning;
// anything unexpected becomes INTERNAL_SERVER_ERROR with only a request id,
// the full error going to the log.
package apierror

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
	"github.com/cmpay/cmpay/webhooks"
)

// The codes clients branch on.
const (
	BadUserInput  = "BAD_USER_INPUT"
	KeyReused     = "IDEMPOTENCY_KEY_REUSED"
	StateConflict = "PAYMENT_STATE_CONFLICT"
	AmountExceeds = "AMOUNT_EXCEEDS_AVAILABLE"
	// ProcessorRefused: the processor refused a capture, cancel or refund;
	// nothing was applied.
	ProcessorRefused = "PROCESSOR_REFUSED"
	// PaymentDeclined: the processor declined a payment's creation. GraphQL
	// answers it as a DECLINED payment, not an error; REST as a 402 problem.
	PaymentDeclined = "PAYMENT_DECLINED"
	// Forbidden: the token lacks the scope, or acts for another client.
	Forbidden       = "FORBIDDEN"
	Unauthenticated = "UNAUTHENTICATED"
	NotFound        = "NOT_FOUND"
	BadRequest      = "BAD_REQUEST"
	TooLarge        = "PAYLOAD_TOO_LARGE"
	// UnsupportedMediaType: a REST body that is not application/json.
	UnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	RateLimited          = "RATE_LIMITED"
	// Unavailable: the database cannot be reached or is read-only; for a
	// subscription, the event stream closed (the server is stopping).
	Unavailable = "SERVICE_UNAVAILABLE"
	Internal    = "INTERNAL_SERVER_ERROR"
)

// Error is an error as a client sees it.
type Error struct {
	Code    string
	Status  int
	Message string
	// Details go into extensions (GraphQL) or the problem body (REST).
	Details map[string]any
}

// FromDomain classifies an error returned by the payments package. Errors
// it does not know are internal: logged in full with the request id, and
// shown as "internal error" and that id.
func FromDomain(ctx context.Context, err error) Error {
	var invalid *payments.InvalidInputError
	var reused *payments.KeyReusedError
	var conflict *payments.StateConflictError
	var exceeds *payments.AmountExceedsError
	var refused *payments.ProcessorRefusedError
	switch {
	case errors.As(err, &invalid):
		problems := make([]map[string]any, len(invalid.Problems))
		for i, p := range invalid.Problems {
			problems[i] = map[string]any{"field": p.Field, "message": p.Message}
		}
		return Error{Code: BadUserInput, Status: http.StatusBadRequest, Message: invalid.Error(),
			Details: map[string]any{"field": invalid.Problems[0].Field, "problems": problems}}
	case errors.As(err, &reused):
		if createOnly(ctx) {
			return keyReusedUnnamed(reused)
		}
		return Error{Code: KeyReused, Status: http.StatusConflict, Message: reused.Error(),
			Details: map[string]any{"paymentId": reused.PaymentID, "differingFields": reused.DifferingFields}}
	case errors.As(err, &conflict):
		details := map[string]any{"status": string(conflict.Status)}
		if conflict.PendingOperation != "" {
			details["pendingOperation"] = string(conflict.PendingOperation)
		}
		return Error{Code: StateConflict, Status: http.StatusConflict, Message: conflict.Error(), Details: details}
	case errors.As(err, &exceeds):
		return Error{Code: AmountExceeds, Status: http.StatusUnprocessableEntity, Message: exceeds.Error(),
			Details: map[string]any{"available": exceeds.Available.String()}}
	case errors.As(err, &refused):
		return Refused(refused)
	case errors.Is(err, payments.ErrNotFound):
		return Error{Code: NotFound, Status: http.StatusNotFound, Message: "no such payment"}
	case errors.Is(err, payments.ErrForbidden):
		return Error{Code: Forbidden, Status: http.StatusForbidden, Message: "this token may not act on this client's payments"}
	case errors.Is(err, webhooks.ErrForbidden):
		return Error{Code: Forbidden, Status: http.StatusForbidden, Message: "this token may not change this webhook endpoint"}
	case errors.Is(err, payments.ErrProcessorUnavailable):
		// This server cannot call the payment's processor; one configured
		// for it can, and the key was left unused for it.
		return Error{Code: Unavailable, Status: http.StatusServiceUnavailable,
			Message: err.Error() + "; retry on a server configured for it, with the same idempotency key"}
	case database.IsUnavailable(err):
		// Not our bug: the database is down, failing over or read-only.
		// The request did not complete; the client retries with its key.
		LogUnavailable(ctx, err)
		return Error{Code: Unavailable, Status: http.StatusServiceUnavailable,
			Message: "the service is briefly unavailable; retry the request with the same idempotency key"}
	case errors.Is(err, auth.ErrForbidden):
		return Error{Code: Forbidden, Status: http.StatusForbidden, Message: err.Error()}
	}
	return FromInternal(ctx, err)
}

// unavailable logs the requests that found the database unavailable: in
// an outage every request fails so, and a line each would bury the rest.
// A request sees no success, so a minute without a failure ends the run
// (Gap): the next outage's first failure is logged as a first one.
var unavailable = &logrepeat.Failures{What: "database unavailable", Gap: logrepeat.DefaultEvery}

// LogUnavailable logs err, which made a request find the database
// unavailable (database.IsUnavailable): the first of a run at once, with
// the request's id, then at most one line a minute counting them.
func LogUnavailable(ctx context.Context, err error) {
	unavailable.Fail(err, "request_id", requestid.From(ctx))
}

// FromInternal logs err and returns what the client may see of it. A
// value of the request that the database refused (badTextMessages) is the
// client's input, not an internal error: BAD_USER_INPUT, on every route
// that ends here.
func FromInternal(ctx context.Context, err error) Error {
	if msg, ok := badText(err); ok {
		return fromBadText(ctx, err, msg)
	}
	id := requestid.From(ctx)
	slog.ErrorContext(ctx, "internal error", "request_id", id, "err", err)
	return Error{Code: Internal, Status: http.StatusInternalServerError,
		Message: "internal error", Details: map[string]any{"requestId": id}}
}

// Refused is what a client sees of a capture, cancel or refund the
// processor refused (or a refund it failed): 402, as Stripe answers a
// refused request, since the request was valid and the processor said no.
func Refused(e *payments.ProcessorRefusedError) Error {
	return Error{Code: ProcessorRefused, Status: http.StatusPaymentRequired, Message: e.Error(),
		Details: map[string]any{"processorCode": nullable(e.Code), "paymentId": e.PaymentID}}
}

// Declined is what a REST client sees of a payment the processor declined:
// a 402 problem naming the payment and the processor's decline code.
// GraphQL shows the same payment as a DECLINED payload instead, so only
// REST, whose answers are statuses, treats a decline as an error.
func Declined(p payments.Payment) Error {
	code := p.DeclineCode
	msg := "the processor declined the payment"
	if code != "" {
		msg += " (" + code + ")"
	}
	return Error{Code: PaymentDeclined, Status: http.StatusPaymentRequired,
		Message: msg + "; no money moved, and a new try needs a new idempotency key",
		Details: map[string]any{"paymentId": p.ID, "declineCode": nullable(code)}}
}

// nullable is s, or nil (JSON null) when it is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// createOnly reports whether ctx's principal may create payments but read
// none it did not make: payments:create without payments:read or
// payments:write, a token a shopper's page holds.
func createOnly(ctx context.Context) bool {
	p, ok := auth.FromContext(ctx)
	return ok && p.Has(auth.PaymentsCreate) && !p.Has(auth.PaymentsRead) && !p.Has(auth.PaymentsWrite)
}

// keyReusedUnnamed is IDEMPOTENCY_KEY_REUSED without the id of the payment
// the key belongs to: keys are often order numbers, and the id would let a
// create-only token find another shopper's payment by guessing one.
func keyReusedUnnamed(e *payments.KeyReusedError) Error {
	return Error{Code: KeyReused, Status: http.StatusConflict, Message: e.Unnamed(),
		Details: map[string]any{"differingFields": e.DifferingFields}}
}
