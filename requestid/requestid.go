// Package requestid gives every HTTP request an id: sent back in the
// X-Request-Id header, attached to log lines and to internal errors, so a
// client's report can be matched with the server's log.
package requestid

import (
	"context"
	"net/http"

	"github.com/oklog/ulid/v2"
)

// Header carries the id in responses.
const Header = "X-Request-Id"

type ctxKey struct{}

// Middleware assigns each request a fresh id. Ids sent by clients are not
// trusted: they could collide or be forged into logs.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := "req_" + ulid.Make().String()
		w.Header().Set(Header, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	})
}

// From returns the request's id, or "" outside a request.
func From(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}
