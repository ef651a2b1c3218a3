package graph

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/graph/scalar"
	"github.com/cmpay/cmpay/requestid"
)

// presentError turns every error of a GraphQL response into one with an
// extensions.code. Errors gqlgen classified (GRAPHQL_PARSE_FAILED,
// GRAPHQL_VALIDATION_FAILED, COMPLEXITY_LIMIT_EXCEEDED) pass through;
// gqlgen's words about a malformed request become BAD_REQUEST; everything
// else is classified by apierror, the mapping REST uses too.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)

	var badValue *scalar.BadValueError
	var own *gqlerror.Error
	switch {
	case errors.As(err, &badValue):
		gqlErr.Extensions = map[string]any{"code": apierror.BadUserInput}
	case gqlErr.Extensions["code"] != nil:
		// Already classified by gqlgen.
	case errors.As(err, &own) && own.Unwrap() == nil && len(own.Path) == 0:
		// gqlgen's own words about the request as a whole: a body that is
		// not JSON, a missing query, an unknown operation name.
		gqlErr.Extensions = map[string]any{"code": apierror.BadRequest}
	default:
		e := apierror.FromDomain(ctx, err)
		gqlErr.Message = e.Message
		gqlErr.Extensions = map[string]any{"code": e.Code}
		for k, v := range e.Details {
			gqlErr.Extensions[k] = v
		}
	}
	return gqlErr
}

// recoverPanic turns a resolver panic into an internal error; the stack goes
// to the log, not to the client.
func recoverPanic(ctx context.Context, p any) error {
	slog.ErrorContext(ctx, "panic in resolver", "request_id", requestid.From(ctx), "panic", p, "stack", string(debug.Stack()))
	return errors.New("panic in resolver")
}
