package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/cmpay/cmpay/apierror"
)

// Subscriptions over WebSocket carry their token in connection_init's
// payload, not in the upgrade request (browsers cannot set its headers),
// so the upgrade passes the bearer check here and the GraphQL handler asks
// websocketAuthenticator when the payload arrives. Every other request to
// /graphql, Server-Sent Events included, needs its Authorization header.

// isWebsocketUpgrade reports whether r asks to become a WebSocket.
func isWebsocketUpgrade(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Upgrade")), "websocket")
}

type peerKey struct{}

// websocketOrToken is the /graphql guard: apiToken for every request but a
// WebSocket upgrade, which only has to come from an address that has not
// failed too often.
func websocketOrToken(apiToken func(http.Handler) http.Handler, failures *failureLimiter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		guarded := apiToken(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isWebsocketUpgrade(r) {
				guarded.ServeHTTP(w, r)
				return
			}
			addr := clientAddr(r)
			if blocked, wait := failures.blocked(addr); blocked {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+1)))
				writeError(w, r, styleGraphQL, apierror.Error{Code: apierror.RateLimited, Status: http.StatusTooManyRequests,
					Message: "too many failed sign-ins from this address; wait and try again"})
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), peerKey{}, addr)))
		})
	}
}

// errBadToken refuses a WebSocket's connection_init.
var errBadToken = errors.New("missing or invalid bearer token")

// websocketAuthenticator checks the Authorization value a WebSocket sends
// in connection_init ("Bearer <token>") as the header would be checked; a
// failure counts against the address like any other.
func websocketAuthenticator(creds *credentials, failures *failureLimiter) func(context.Context, string) (context.Context, error) {
	return func(ctx context.Context, authorization string) (context.Context, error) {
		if creds.bearer(&http.Request{Header: http.Header{"Authorization": {authorization}}}) {
			return ctx, nil
		}
		if addr, ok := ctx.Value(peerKey{}).(string); ok {
			failures.failed(addr)
		}
		return ctx, errBadToken
	}
}
