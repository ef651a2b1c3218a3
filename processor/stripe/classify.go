package stripe

import (
	"context"
	"errors"
	"net/http"

	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
)

// classify turns what stripe-go returned into a *processor.Error. The
// table and its reasons are in docs/design/processors.md; in short, only
// an answer in which Stripe says the request did nothing is known.
func classify(ctx context.Context, op string, err error) error {
	var se *stripeapi.Error
	if !errors.As(err, &se) {
		e := &processor.Error{Kind: processor.KindBadResponse, Op: op, Err: err}
		var netErr interface{ Timeout() bool }
		switch k, ended := processor.ContextKind(ctx); {
		case ended:
			e.Kind = k
		case errors.As(err, &netErr) && netErr.Timeout():
			e.Kind = processor.KindTimeout
		case isTransport(err):
			e.Kind = processor.KindNetwork
		}
		return e
	}
	e := &processor.Error{Op: op, Code: string(se.Code), Message: se.Msg, HTTPStatus: se.HTTPStatusCode,
		RequestID: se.RequestID, Err: err}
	if se.LastResponse != nil && se.LastResponse.Header.Get("Idempotent-Replayed") == "true" {
		e.Replayed = true
	}
	if se.PaymentIntent != nil {
		e.Reference = se.PaymentIntent.ID
	}
	e.Kind = kindOf(op, se)
	if e.Kind == processor.KindDeclined {
		e.Code = declineCode(se)
	}
	return e
}

func kindOf(op string, se *stripeapi.Error) processor.Kind {
	status := se.HTTPStatusCode
	switch {
	case status >= 500:
		return processor.KindServerError
	case status == http.StatusFailedDependency:
		// A party outside Stripe (a card network, a bank) failed while the
		// request executed: it may have moved the money. Stripe stores the
		// 424 under the key as it stores a 500, so it is one: only a read
		// settles it.
		return processor.KindServerError
	case status == http.StatusConflict:
		// Before the type: Stripe answers a key whose first request still
		// executes with a 409 of type idempotency_error, which says nothing
		// of how that request ends. Read as a mismatch, the operation would
		// only be read from then on, never asked again.
		return processor.KindInProgress
	case se.Type == stripeapi.ErrorTypeIdempotency:
		return processor.KindIdempotencyMismatch
	case status == http.StatusTooManyRequests && se.Code == stripeapi.ErrorCodeLockTimeout:
		return processor.KindInProgress
	case status == http.StatusTooManyRequests:
		return processor.KindRateLimited
	case status == http.StatusPaymentRequired || se.Type == stripeapi.ErrorTypeCard:
		return processor.KindDeclined
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return processor.KindAuthentication
	case status == http.StatusNotFound && isRead(op):
		return processor.KindNotFound
	case status == http.StatusBadRequest || status == http.StatusNotFound:
		return processor.KindInvalidRequest
	}
	// A status Stripe does not document for its API (a 405, 408 or 413
	// from something between CMPay and Stripe, or one added later) does
	// not say that the request did nothing: read as a refusal, a refund
	// that was made would be released for another.
	return processor.KindBadResponse
}

func isRead(op string) bool {
	return op == "get_payment" || op == "find_payments" || op == "list_payments" || op == "get_refund" || op == "list_refunds"
}

// isTransport says whether err came from the HTTP round trip itself (a
// refused, reset or closed connection) rather than from reading an
// answer: net/http wraps those in *url.Error.
func isTransport(err error) bool {
	var ue interface {
		Unwrap() error
		Temporary() bool
	}
	return errors.As(err, &ue)
}
