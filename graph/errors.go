package graph

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/graph/scalar"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
)

// The codes clients see in extensions.code. gqlgen adds its own for
// requests that do not parse or validate (GRAPHQL_PARSE_FAILED,
// GRAPHQL_VALIDATION_FAILED); these are ours.
const (
	CodeBadUserInput    = "BAD_USER_INPUT"
	CodeBadRequest      = "BAD_REQUEST"
	CodeKeyReused       = "IDEMPOTENCY_KEY_REUSED"
	CodeUnauthenticated = "UNAUTHENTICATED"
	CodeInternal        = "INTERNAL_SERVER_ERROR"
)

// presentError is the one place an error becomes what a client sees. Domain
// errors get their codes and details; errors gqlgen already coded pass
// through; anything else is internal, logged in full and shown to the
// client only as "internal error" and the request id, never SQL or a stack.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)

	var invalid *payments.InvalidInputError
	var reused *payments.KeyReusedError
	var badValue *scalar.BadValueError
	var own *gqlerror.Error
	switch {
	case errors.As(err, &invalid):
		gqlErr.Message = invalid.Error()
		problems := make([]map[string]any, len(invalid.Problems))
		for i, p := range invalid.Problems {
			problems[i] = map[string]any{"field": p.Field, "message": p.Message}
		}
		gqlErr.Extensions = map[string]any{
			"code":     CodeBadUserInput,
			"field":    invalid.Problems[0].Field,
			"problems": problems,
		}
	case errors.As(err, &reused):
		gqlErr.Message = reused.Error()
		gqlErr.Extensions = map[string]any{
			"code":            CodeKeyReused,
			"paymentId":       reused.PaymentID,
			"differingFields": reused.DifferingFields,
		}
	case errors.As(err, &badValue):
		gqlErr.Extensions = map[string]any{"code": CodeBadUserInput}
	case gqlErr.Extensions["code"] != nil:
		// Already classified by gqlgen (parse, validation, limits).
	case errors.As(err, &own) && own.Unwrap() == nil && len(own.Path) == 0:
		// gqlgen's own words about the request as a whole: a body that is
		// not JSON, a missing query, an unknown operation name.
		gqlErr.Extensions = map[string]any{"code": CodeBadRequest}
	default:
		id := requestid.From(ctx)
		slog.ErrorContext(ctx, "internal error", "request_id", id, "path", gqlErr.Path.String(), "err", err)
		gqlErr.Message = "internal error"
		gqlErr.Extensions = map[string]any{"code": CodeInternal, "requestId": id}
	}
	return gqlErr
}

// recoverPanic turns a resolver panic into an internal error; the stack goes
// to the log, not to the client.
func recoverPanic(ctx context.Context, p any) error {
	slog.ErrorContext(ctx, "panic in resolver", "request_id", requestid.From(ctx), "panic", p, "stack", string(debug.Stack()))
	return errors.New("panic in resolver")
}
