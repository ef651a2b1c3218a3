package graph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/clientid"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
)

// Subscriptions and webhook endpoints: the resolvers' helpers and the two
// streaming transports, WebSocket (graphql-transport-ws, and the older
// graphql-ws) and Server-Sent Events (graphql-sse's distinct connections
// mode), both gqlgen's own.

var (
	errNoEvents   = errors.New("payment events are not available on this server")
	errNoWebhooks = errors.New("webhooks are not available on this server")
)

// clientOf is the client the request's credentials are bound to ("" for
// none).
func (r *Resolver) clientOf(ctx context.Context) string {
	if r.ClientOf == nil {
		return ""
	}
	return r.ClientOf(ctx)
}

// paymentEvents streams events to one subscription. A client-bound token
// sees its client's events only, and asking for another's is FORBIDDEN.
// The subscription counts against the subscription caps (see
// SubscriptionLimits) until it ends, and ends when its connection's
// credentials are refused (see connection).
func (r *Resolver) paymentEvents(ctx context.Context, clientID, paymentID string, after *string) (<-chan *events.Event, error) {
	if r.Events == nil {
		return nil, errNoEvents
	}
	f := events.Filter{ClientID: clientid.Normalize(clientID), PaymentID: paymentID}
	if bound := r.clientOf(ctx); bound != "" {
		if f.ClientID != "" && f.ClientID != bound {
			return nil, fmt.Errorf("subscribe to client %q's events: %w", f.ClientID, payments.ErrForbidden)
		}
		f.ClientID = bound
	}
	var from *int64
	if after != nil {
		id, err := events.ParseID(*after)
		if err != nil {
			return nil, err
		}
		if err := r.Events.CheckAfter(ctx, id); err != nil {
			return nil, err
		}
		from = &id
	}
	conn := connectionOf(ctx)
	release, refused := r.subscriptions.take(conn)
	if refused != nil {
		return nil, refused
	}
	subCtx, cancel := context.WithCancel(ctx)
	sub := r.Events.Subscribe(subCtx, f, from)
	out := make(chan *events.Event)
	feed, _ := ctx.Value(eventFeedKey{}).(*eventFeed)
	feed.start()
	go func() {
		defer release()
		defer close(out)
		defer feed.stop()
		defer cancel()
		forward(ctx, conn, sub, out, feed, r.batchLoaders(ctx))
	}()
	return out, nil
}

// maxBatch is the most events forward takes together from a read of the
// outbox (a page is up to a thousand): what one batch's lists hold in
// memory beside the page.
const maxBatch = 100

// batchLoaders makes, for a batch of events, loaders primed with every
// list the subscription's selection asks of their payments: one read per
// list for the batch, each event's lists as of its event (payments'
// asof.go). A read that fails primes nothing: each event then reads its
// own, and says its error there.
func (r *Resolver) batchLoaders(ctx context.Context) func([]events.Event) *loaders {
	return func(batch []events.Event) *loaders {
		l := newLoaders(r.Service)
		ps := make([]payments.Payment, len(batch))
		for i := range batch {
			ps[i] = batch[i].Payment
		}
		if err := primeInto(ctx, l, r.Service, ps, "payment"); err != nil {
			return newLoaders(r.Service)
		}
		return l
	}
}

// forward hands sub's events to out until the subscription ends, its
// client leaves (ctx), or its connection's credentials are refused. It
// takes the events the subscription sends together (events.Event's
// Following, up to maxBatch), makes their loaders (loadersOf), and hands
// each event's loaders to feed just before the event.
func forward(ctx context.Context, conn *connection, sub *events.Subscription, out chan<- *events.Event,
	feed *eventFeed, loadersOf func([]events.Event) *loaders) {
	var revoked <-chan struct{}
	if conn != nil {
		revoked = conn.refused
	}
	for {
		batch, ended := take(ctx, sub, revoked)
		var l *loaders
		if len(batch) > 0 && feed != nil {
			l = loadersOf(batch)
		}
		for i := range batch {
			// No event goes out once the credentials are refused.
			if isClosed(revoked) || !feed.send(ctx, l) {
				break
			}
			select {
			case out <- &batch[i]:
			case <-ctx.Done():
				return
			case <-revoked:
			}
		}
		switch {
		case ctx.Err() != nil:
			return
		case isClosed(revoked):
			endSubscription(ctx, conn, refusedError())
			return
		case ended:
			if err := sub.Err(); err != nil {
				endSubscription(ctx, conn, subscriptionError(ctx, err))
			}
			return
		}
	}
}

// take waits for sub's next event and takes those sent with it (Following),
// up to maxBatch. ended: the subscription ended (closed, the client gone,
// the credentials refused), after the events returned.
func take(ctx context.Context, sub *events.Subscription, revoked <-chan struct{}) (batch []events.Event, ended bool) {
	for want := 1; len(batch) < want; {
		select {
		case e, ok := <-sub.C:
			if !ok {
				return batch, true
			}
			batch = append(batch, e)
			want = min(len(batch)+e.Following, maxBatch)
		case <-ctx.Done():
			return batch, true
		case <-revoked:
			return batch, true
		}
	}
	return batch, false
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// eventFeed hands each event of a subscription its loaders, from the
// goroutine that forwards the events (forward) to gqlgen's, which resolves
// them (withEventLoaders): the k-th loaders sent go with the k-th event,
// since one goroutine sends both in that order and the other takes both in
// that order. A nil eventFeed feeds nothing.
type eventFeed struct {
	started atomic.Bool
	next    chan *loaders
	stopped chan struct{}
}

type eventFeedKey struct{}

func (f *eventFeed) start() {
	if f != nil {
		f.started.Store(true)
	}
}

// stop says no more loaders come: the events are over.
func (f *eventFeed) stop() {
	if f != nil {
		close(f.stopped)
	}
}

// send hands l to the next event's resolution; false when ctx ended first.
func (f *eventFeed) send(ctx context.Context, l *loaders) bool {
	if f == nil {
		return true
	}
	select {
	case f.next <- l:
		return true
	case <-ctx.Done():
		return false
	}
}

// receive is the loaders of the next event: nil for fresh ones, once the
// events are over or when the subscription never started forwarding (its
// resolver refused it).
func (f *eventFeed) receive(ctx context.Context) *loaders {
	if !f.started.Load() {
		return nil
	}
	select {
	case l := <-f.next:
		return l
	case <-f.stopped:
	case <-ctx.Done():
	}
	return nil
}

// withEventLoaders gives each event of a subscription loaders of its own,
// those forward made for its batch: a request's loaders cache what they
// read for the request's life, and a subscription's request lasts as long
// as its stream. A query or mutation over a WebSocket gets loaders of its
// own too: the socket's request, open for hours, is every one of its
// operations', and its loaders would show the next query the lists the
// first one read.
func withEventLoaders(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if op := graphql.GetOperationContext(ctx).Operation; op == nil || op.Operation != ast.Subscription {
		if overWebsocket(ctx) {
			ctx = withOwnLoaders(ctx, nil)
		}
		return next(ctx)
	}
	feed := &eventFeed{next: make(chan *loaders), stopped: make(chan struct{})}
	events := next(context.WithValue(ctx, eventFeedKey{}, feed))
	return func(ctx context.Context) *graphql.Response {
		return events(withOwnLoaders(ctx, feed.receive(ctx)))
	}
}

// endSubscription ends a subscription with an error the client can act on.
// graphql-transport-ws ends the subscription with an error message rather
// than "complete"; over SSE, the error is the stream's last event before
// "complete" (streamEnd). Either way the client resumes with `after`. A
// WebSocket whose token was refused is closed with 4403 instead.
func endSubscription(ctx context.Context, conn *connection, e *gqlerror.Error) {
	switch {
	case overWebsocket(ctx):
		select {
		case <-conn.refused:
		default:
			if en, ok := ctx.Value(endingKey{}).(*ending); ok {
				en.set(e)
			}
		}
	case conn != nil:
		conn.ended(e)
	}
}

// ending carries the error a WebSocket subscription ends with from the
// goroutine that forwards its events to gqlgen's, which sends it. gqlgen
// keeps a subscription's errors unguarded and reads them on its own
// goroutine, which may return the moment the operation's context ends:
// writing them from ours (transport.AddSubscriptionError) raced with that
// read. The error crosses here, under a lock, and endWithError hands it to
// gqlgen from gqlgen's goroutine.
type ending struct {
	mu  sync.Mutex
	err *gqlerror.Error
}

type endingKey struct{}

func (en *ending) set(e *gqlerror.Error) {
	en.mu.Lock()
	defer en.mu.Unlock()
	en.err = e
}

func (en *ending) take() *gqlerror.Error {
	en.mu.Lock()
	defer en.mu.Unlock()
	e := en.err
	en.err = nil
	return e
}

// withEnding gives each WebSocket subscription an ending.
func withEnding(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if rc := graphql.GetOperationContext(ctx); rc.Operation != nil && rc.Operation.Operation == ast.Subscription && overWebsocket(ctx) {
		ctx = context.WithValue(ctx, endingKey{}, &ending{})
	}
	return next(ctx)
}

// endWithError runs on gqlgen's goroutine for each response of an
// operation: when a subscription's stream ends (no response) with an
// error left in its ending, it becomes the subscription's error message.
func endWithError(ctx context.Context, resp *graphql.Response) *graphql.Response {
	if resp == nil {
		if en, ok := ctx.Value(endingKey{}).(*ending); ok {
			if e := en.take(); e != nil {
				transport.AddSubscriptionError(ctx, e)
			}
		}
	}
	return resp
}

// codeTooSlow ends a subscription whose reader fell behind; one ended
// because the stream closed gets apierror.Unavailable.
const codeTooSlow = "SUBSCRIBER_TOO_SLOW"

func subscriptionError(ctx context.Context, err error) *gqlerror.Error {
	e := &gqlerror.Error{Message: err.Error(), Path: graphql.GetPath(ctx)}
	switch {
	case errors.Is(err, events.ErrTooSlow):
		e.Extensions = map[string]any{"code": codeTooSlow}
	case errors.Is(err, events.ErrClosed):
		e.Extensions = map[string]any{"code": apierror.Unavailable}
	default:
		ae := apierror.FromInternal(ctx, err)
		e.Message, e.Extensions = ae.Message, map[string]any{"code": ae.Code, "requestId": ae.Details["requestId"]}
	}
	return e
}

// upgradeAuthKey carries the upgrade request's own Authorization header, for
// clients that can send one (browsers cannot).
type upgradeAuthKey struct{}

// websocketTransport is gqlgen's WebSocket transport. The token comes in
// connection_init's payload, {"Authorization": "Bearer <token>"} (or, for
// clients that can send one, the upgrade request's Authorization header);
// opts.Authenticate checks it, and a refusal closes the socket with 4403.
// A socket past connection_init counts against its token's and the
// instance's caps (subscriptionCounter.takeSocket): one over either closes
// with 1013, try again later. Each socket is a connection whose token is
// checked again while it is open (see connection), and whose messages
// follow graphql-transport-ws (see protocolConn).
type websocketTransport struct {
	transport.Websocket
	recheck rechecker
}

func newWebsocketTransport(opts Options, recheck rechecker, sockets *subscriptionCounter) websocketTransport {
	initTimeout := opts.InitTimeout
	if initTimeout <= 0 {
		initTimeout = DefaultInitTimeout
	}
	return websocketTransport{recheck: recheck, Websocket: transport.Websocket{
		Implementation: protocolImplementation{initTimeout: initTimeout, writeTimeout: opts.StreamWriteTimeout,
			onCut: opts.OnStreamCut,
			CoderWebsocketImplementation: transport.CoderWebsocketImplementation{
				AcceptOptions: websocket.AcceptOptions{
					// Any origin may connect: credentials travel in the payload,
					// never in a cookie a browser would add by itself, so a
					// cross-site page gets nowhere without the token.
					InsecureSkipVerify: true,
				}}},
		// protocolConn times connection_init, to close with 4408.
		InitTimeout:           0,
		KeepAlivePingInterval: 15 * time.Second,
		PingPongInterval:      15 * time.Second,
		MissingPongOk:         true,
		InitFunc: func(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
			auth := payload.Authorization()
			if auth == "" {
				auth, _ = ctx.Value(upgradeAuthKey{}).(string)
			}
			if opts.Authenticate == nil {
				return refuse(ctx)
			}
			authed, err := opts.Authenticate(ctx, auth)
			switch {
			case errors.Is(err, ErrRefused):
				return refuse(ctx)
			case err != nil:
				// Not a verdict on the token (the database is unreachable, say):
				// 4403 would tell the client to give up on a good one.
				initChecks.Fail(err, "request_id", requestid.From(ctx))
				return tryLater(ctx, errors.New("the credentials could not be checked; try again later"))
			}
			if c := connectionOf(ctx); c != nil {
				c.authenticated(auth)
				if err := sockets.takeSocket(c); err != nil {
					return tryLater(ctx, err)
				}
			}
			return authed, nil, nil
		},
	}}
}

func refuse(ctx context.Context) (context.Context, *transport.InitPayload, error) {
	ctx = transport.WithWebsocketCloseCode(ctx, CloseForbidden)
	ctx = transport.AppendCloseReason(ctx, "Forbidden")
	return ctx, nil, errors.New("Forbidden")
}

// tryLater closes a socket over a cap with 1013 (RFC 6455's Try Again
// Later), which graphql-ws clients retry with backoff.
func tryLater(ctx context.Context, err error) (context.Context, *transport.InitPayload, error) {
	ctx = transport.WithWebsocketCloseCode(ctx, int(websocket.StatusTryAgainLater))
	ctx = transport.AppendCloseReason(ctx, err.Error())
	return ctx, nil, err
}

func (t websocketTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// The server's read and write timeouts are for requests; a socket lives
	// for as long as it is used (gqlgen pings it).
	unlimited(w)
	conn := newConnection(true)
	ctx := withConnection(r.Context(), conn)
	ctx = context.WithValue(ctx, upgradeAuthKey{}, r.Header.Get("Authorization"))
	t.recheck.serve(ctx, conn, func(ctx context.Context) {
		t.Websocket.Do(w, r.WithContext(ctx), exec)
		// gqlgen returns without closing the socket on some failed
		// connection_init (a payload it cannot decode): no socket may
		// outlive its handler, which gives back its slot (httpapi's cap).
		conn.drop()
		conn.releaseSocket()
	})
}

// sseTransport is gqlgen's Server-Sent Events transport (graphql-sse,
// distinct connections mode), with the connection's deadlines lifted. Each
// stream is a connection whose token, checked by the HTTP layer when the
// stream opened, is checked again while it is open (see connection). Its
// POST body is one JSON object, as a plain POST's is (oneJSONObject).
type sseTransport struct {
	transport.SSE
	recheck      rechecker
	writeTimeout time.Duration
	onCut        func(transport string) // Options.OnStreamCut
}

func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// The body is read under the server's read timeout, like any request's:
	// only the stream that follows is unlimited, but for each write.
	if !oneJSONObject(w, r) {
		return
	}
	unlimited(w)
	w = streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: t.writeTimeout,
		cut: onceFunc(t.onCut, "sse")}
	conn := newConnection(false)
	conn.authenticated(r.Header.Get("Authorization"))
	ctx := context.WithValue(withConnection(r.Context(), conn), streamKey{}, true)
	t.recheck.serve(ctx, conn, func(ctx context.Context) { t.SSE.Do(w, r.WithContext(ctx), exec) })
}

// DefaultStreamWriteTimeout is how long a WebSocket or an SSE stream may
// take to accept one write unless Options.StreamWriteTimeout says
// otherwise: an event is a few KB, and a client that takes none of it for
// this long has stopped reading.
const DefaultStreamWriteTimeout = 30 * time.Second

// streamWriter is an SSE stream's ResponseWriter: each write and flush
// must leave within timeout. Its connection's deadlines are lifted for the
// stream's life (unlimited), so a client that stopped reading, its
// connection still open, would otherwise hold the write, its subscription's
// place under the caps, a goroutine and the connection for ever, past its
// token's revocation too. A write past the deadline fails, which ends the
// request's context (net/http does), and so the subscription.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	cut     func() // counts the stream cut, once
}

func (s streamWriter) Write(b []byte) (int, error) {
	began := time.Now()
	_ = s.rc.SetWriteDeadline(began.Add(s.timeout))
	n, err := s.ResponseWriter.Write(b)
	s.failed(began, err)
	return n, err
}

func (s streamWriter) Flush() {
	began := time.Now()
	_ = s.rc.SetWriteDeadline(began.Add(s.timeout))
	s.failed(began, s.rc.Flush())
}

// failed counts the stream cut when its write deadline passed: the write
// failed with it, or took the whole timeout (a middleware's Flush, which
// the controller reaches first, returns no error).
func (s streamWriter) failed(began time.Time, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) || time.Since(began) >= s.timeout {
		s.cut()
	}
}

// onceFunc is a func that tells hook transport on its first call and does
// nothing after, nor at all when hook is nil.
func onceFunc(hook func(transport string), transport string) func() {
	if hook == nil {
		return func() {}
	}
	return sync.OnceFunc(func() { hook(transport) })
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

type streamKey struct{}

// streamsOnly refuses a subscription sent over plain HTTP (a POST that
// does not accept text/event-stream): it would wait for one event and end.
func streamsOnly(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	rc := graphql.GetOperationContext(ctx)
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription && !overWebsocket(ctx) && ctx.Value(streamKey{}) == nil {
		err := gqlerror.Errorf("a subscription needs a stream: a WebSocket (graphql-transport-ws) or a POST with Accept: text/event-stream")
		errcode.Set(err, apierror.BadRequest)
		return graphql.OneShot(&graphql.Response{Errors: gqlerror.List{err}})
	}
	return next(ctx)
}

// unlimited lifts the server's read and write deadlines from a streaming
// connection: otherwise it would be cut after WriteTimeout, and the end of
// the read deadline would cancel the request.
func unlimited(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}
