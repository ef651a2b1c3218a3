package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/graph"
)

// Subscriptions over WebSocket carry their token in connection_init's
// payload, not in the upgrade request (browsers cannot set its headers),
// so an upgrade without an Authorization header passes the bearer check
// here and the GraphQL handler asks websocketAuthenticator when the
// payload arrives. Every other request to /graphql, Server-Sent Events and
// upgrades that do bring the header included, has that header checked
// first, as the API's every request.

// isWebsocketUpgrade reports whether r asks to become a WebSocket.
func isWebsocketUpgrade(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Upgrade")), "websocket")
}

// websocketOrToken is the /graphql guard: apiToken for every request but a
// WebSocket upgrade without an Authorization header, which is let through
// to bring its token in connection_init. Such an upgrade is not refused by
// its address's failure budget either: the address may be shared (a NAT,
// a load balancer when TRUSTED_PROXIES is unset), and a valid token is
// never refused for others' failures; a bad token in connection_init is
// counted against the address like any other (websocketAuthenticator).
// It must take a slot in pending, though, held until connection_init
// arrives or the socket ends (gqlgen's transport serves a socket for its
// whole life), so that unknown sockets cannot pile up: past a cap, the
// oldest waiting socket is dropped.
func websocketOrToken(apiToken func(http.Handler) http.Handler, pending *pendingSockets) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		guarded := apiToken(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isWebsocketUpgrade(r) || len(r.Header.Values("Authorization")) != 0 {
				guarded.ServeHTTP(w, r)
				return
			}
			socket, release := pending.admit(clientaddr.From(r.Context()))
			defer release()
			next.ServeHTTP(watchHijack{w, socket}, r.WithContext(context.WithValue(r.Context(), pendingReleaseKey{}, release)))
		})
	}
}

// errBadToken refuses a WebSocket's connection_init: it wraps
// graph.ErrRefused, which closes the socket with 4403, where a check that
// could not be made closes it with 1013, try again later.
var errBadToken = fmt.Errorf("missing or invalid bearer token: %w", graph.ErrRefused)

// websocketAuthenticator checks the Authorization value a WebSocket sends
// in connection_init ("Bearer <token>") as the header would be checked, and
// puts the token's principal (scopes, client) into the connection's
// context; a failure counts against the address and the token like any
// other.
func websocketAuthenticator(creds *credentials, failures *auth.FailureLimiter) func(context.Context, string) (context.Context, error) {
	return func(ctx context.Context, authorization string) (context.Context, error) {
		// connection_init has come, good token or bad: the socket is no
		// longer waiting for it.
		releasePending(ctx)
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
