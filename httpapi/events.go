package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/graph"
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

// websocketOrToken is the /graphql guard: apiToken for every request but a
// WebSocket upgrade, which only has to come from an address that has not
// failed too often, and bring at most one Authorization header, as every
// request must.
func websocketOrToken(apiToken func(http.Handler) http.Handler, failures *auth.FailureLimiter, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		guarded := apiToken(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isWebsocketUpgrade(r) {
				guarded.ServeHTTP(w, r)
				return
			}
			if refuseSeveralAuthorizations(w, r, styleGraphQL, failures, log) {
				return
			}
			if blocked := failures.Blocked(auth.Attempt{Addr: clientaddr.From(r.Context())}); blocked.Addr {
				w.Header().Set("Retry-After", strconv.Itoa(int(blocked.RetryAfter.Seconds()+1)))
				writeError(w, r, styleGraphQL, apierror.Error{Code: apierror.RateLimited, Status: http.StatusTooManyRequests,
					Message: "too many failed sign-ins from this address; wait and try again"})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// errBadToken refuses a WebSocket's connection_init.
var errBadToken = errors.New("missing or invalid bearer token")

// websocketAuthenticator checks the Authorization value a WebSocket sends
// in connection_init ("Bearer <token>") as the header would be checked, and
// puts the token's principal (scopes, client) into the connection's
// context; a failure counts against the address and the token like any
// other.
func websocketAuthenticator(creds *credentials, failures *auth.FailureLimiter) func(context.Context, string) (context.Context, error) {
	return func(ctx context.Context, authorization string) (context.Context, error) {
		req := (&http.Request{Header: http.Header{"Authorization": {authorization}}}).WithContext(ctx)
		res, err := creds.bearer(req)
		if err != nil {
			return ctx, err
		}
		if res.ok {
			return auth.WithPrincipal(ctx, res.principal), nil
		}
		failures.Failed(auth.Attempt{Addr: clientaddr.From(ctx), Identity: res.identity})
		return ctx, errBadToken
	}
}

// connectionRecheck checks again, for a WebSocket or an SSE stream still
// open, the Authorization value it opened with, as every HTTP request's is
// checked (see graph.Options.Recheck). A refusal is not a guess: it does
// not count against the failure limiter.
func connectionRecheck(creds *credentials) func(context.Context, string, time.Duration) error {
	return func(ctx context.Context, authorization string, margin time.Duration) error {
		res, err := creds.bearerValue(ctx, authorization, margin)
		if err != nil {
			return err
		}
		if !res.ok {
			return fmt.Errorf("recheck: %w", graph.ErrRefused)
		}
		return nil
	}
}
