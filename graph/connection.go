package graph

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/requestid"
)

// Long-lived connections. A WebSocket presents its token once, in
// connection_init, and an SSE stream once, in its request's header; both
// may then stay open for hours. So that a revoked token loses them as it
// loses HTTP, each is a connection whose token is checked again: before
// every operation a WebSocket carries (as HTTP checks every request), and
// every RecheckEvery while it is open. A WebSocket whose token is refused
// closes with 4403; an SSE stream ends its subscription with an
// UNAUTHENTICATED error.

// ErrRefused is what Options.Recheck returns (wrapped or not) when a
// connection's credentials are no longer accepted.
var ErrRefused = errors.New("the credentials are no longer accepted")

// DefaultRecheckEvery is how often an open connection's token is checked
// again unless Options.RecheckEvery says otherwise.
const DefaultRecheckEvery = 2 * time.Second

// connection is one WebSocket or one SSE stream.
type connection struct {
	websocket bool
	// authed is closed once authorization is known: at once for SSE, after
	// a successful connection_init for a WebSocket.
	authed chan struct{}
	// refused is closed when the credentials are refused.
	refused chan struct{}

	mu            sync.Mutex
	authorization string // the Authorization value ("Bearer <token>")
	token         string // its token's SHA-256, for the per-token count
	// end is the error an SSE stream's subscription ended with, sent as
	// its last event (see streamEnd).
	end *gqlerror.Error
	// closeSocket closes a WebSocket with a code, dropSocket closes it
	// outright; nil for SSE.
	closeSocket func(code int, reason string)
	dropSocket  func()

	// socket gives back the WebSocket's place under its caps (nil until it
	// has one: subscriptionCounter.takeSocket).
	socket func()

	refuseOnce sync.Once

	// subscriptions is how many are open on the connection; guarded by
	// subscriptionCounter.mu, not mu.
	subscriptions int
}

func newConnection(websocket bool) *connection {
	return &connection{websocket: websocket, authed: make(chan struct{}), refused: make(chan struct{})}
}

// authenticated records the Authorization value the connection's
// operations run under.
func (c *connection) authenticated(authorization string) {
	_, token, _ := strings.Cut(authorization, " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	c.mu.Lock()
	c.authorization, c.token = authorization, string(sum[:])
	c.mu.Unlock()
	close(c.authed)
}

func (c *connection) credentials() (authorization, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authorization, c.token
}

// refuse ends the connection for refused credentials: a WebSocket closes
// with 4403, an SSE stream's subscription ends (see paymentEvents).
func (c *connection) refuse() {
	c.refuseOnce.Do(func() {
		close(c.refused)
		c.mu.Lock()
		closeSocket := c.closeSocket
		c.mu.Unlock()
		if closeSocket != nil {
			closeSocket(CloseForbidden, "Forbidden")
		}
	})
}

// releaseSocket gives back the WebSocket's place under its caps, if it
// took one; the socket has closed.
func (c *connection) releaseSocket() {
	c.mu.Lock()
	release := c.socket
	c.mu.Unlock()
	if release != nil {
		release() // once only, however often called
	}
}

// drop closes the connection's WebSocket outright, if it has one.
func (c *connection) drop() {
	c.mu.Lock()
	dropSocket := c.dropSocket
	c.mu.Unlock()
	if dropSocket != nil {
		dropSocket()
	}
}

// ended records the error an SSE stream's subscription ended with; the
// first one counts.
func (c *connection) ended(e *gqlerror.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.end == nil {
		c.end = e
	}
}

func (c *connection) takeEnd() *gqlerror.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.end
	c.end = nil
	return e
}

type connectionKey struct{}

func withConnection(ctx context.Context, c *connection) context.Context {
	return context.WithValue(ctx, connectionKey{}, c)
}

// connectionOf is the WebSocket or SSE stream ctx runs on, nil for a plain
// HTTP request.
func connectionOf(ctx context.Context) *connection {
	c, _ := ctx.Value(connectionKey{}).(*connection)
	return c
}

// overWebsocket reports whether ctx belongs to a WebSocket connection.
func overWebsocket(ctx context.Context) bool {
	c := connectionOf(ctx)
	return c != nil && c.websocket
}

// rechecker checks connections' credentials again (Options.Recheck, every
// Options.RecheckEvery).
type rechecker struct {
	check func(ctx context.Context, authorization string, margin time.Duration) error
	every time.Duration
}

// watch checks c's credentials every r.every until ctx ends or they are
// refused. Each check believes a cached answer only if it would still be
// believed at the next check (the margin), so that a revocation ends the
// connection within the token cache's lifetime, as it ends HTTP requests.
// A check that cannot be made (the database is down) leaves the
// connection as it is until the next one, and is logged once per outage:
// every open connection fails its checks together.
func (r rechecker) watch(ctx context.Context, c *connection) {
	if r.check == nil {
		return
	}
	select {
	case <-c.authed:
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	authorization, _ := c.credentials()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := r.check(ctx, authorization, r.every)
		switch {
		case errors.Is(err, ErrRefused):
			c.refuse()
			return
		case err != nil && ctx.Err() == nil:
			rechecks.Fail(err, "request_id", requestid.From(ctx))
		}
	}
}

// rechecks logs the rechecks that could not be made: in a database
// outage every open connection's fails at each tick, and a line each
// would bury the rest. One socket's success does not end the others'
// failures, so only a minute without any ends a run (Gap).
var rechecks = &logrepeat.Failures{What: "recheck a connection's credentials", Gap: logrepeat.DefaultEvery}

// initChecks logs, as rechecks does, the checks of a WebSocket's
// connection_init credentials that could not be made: the client is told
// only to try again later (1013).
var initChecks = &logrepeat.Failures{What: "check a WebSocket's credentials", Gap: logrepeat.DefaultEvery}

// serve runs a connection, checking its credentials again while it is
// open.
func (r rechecker) serve(ctx context.Context, conn *connection, run func(context.Context)) {
	watchCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.watch(watchCtx, conn) })
	run(ctx)
	stop()
	wg.Wait()
}

// aroundOperations checks a WebSocket's credentials again before each of
// its operations, as HTTP checks each request: a refusal closes the socket
// with 4403 and the operation does not run.
func (r rechecker) aroundOperations(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	c := connectionOf(ctx)
	if c == nil || !c.websocket {
		return next(ctx) // plain HTTP and SSE: the request itself was checked
	}
	if r.check == nil {
		return refusedResponse()
	}
	authorization, _ := c.credentials()
	err := r.check(ctx, authorization, 0)
	switch {
	case errors.Is(err, ErrRefused):
		c.refuse()
		return refusedResponse()
	case err != nil:
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{presentError(ctx, err)}})
	}
	return next(ctx)
}

func refusedResponse() graphql.ResponseHandler {
	return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{refusedError()}})
}

// refusedError ends what a refused token had running.
func refusedError() *gqlerror.Error {
	return &gqlerror.Error{Message: "the token is no longer valid (revoked); nothing more is sent",
		Extensions: map[string]any{"code": apierror.Unauthenticated}}
}

// streamEnd sends, as an SSE stream's last event before "complete", the
// error its subscription ended with: graphql-sse has no error message of
// its own, and gqlgen's SSE transport would end the stream in silence.
func streamEnd(ctx context.Context, resp *graphql.Response) *graphql.Response {
	if resp != nil {
		return resp
	}
	if c := connectionOf(ctx); c != nil && !c.websocket {
		if e := c.takeEnd(); e != nil {
			return &graphql.Response{Errors: gqlerror.List{e}}
		}
	}
	return nil
}
