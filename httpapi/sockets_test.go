package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// Long-lived connections (WebSocket, SSE) and what they may hold: their
// token is checked again while they are open, and their subscriptions are
// capped.

// withGraphQL changes the GraphQL options of the surface under test.
func withGraphQL(change func(*graph.Options)) func(*httpapi.Deps) {
	return func(d *httpapi.Deps) {
		opts := graph.DefaultOptions()
		change(&opts)
		d.GraphQL = &opts
	}
}

// revocable creates a managed token bound to client and returns its id
// and secret.
func (b *bundle) revocable(t *testing.T, client string) (id, secret string) {
	t.Helper()
	tok, secret, err := b.tokens.Create(context.Background(), "socket "+client, client, auth.DefaultScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok.ID, secret
}

func (b *bundle) revoke(t *testing.T, id string) {
	t.Helper()
	if _, err := b.tokens.Revoke(context.Background(), id, nil); err != nil {
		t.Fatal(err)
	}
}

// dialWS opens a graphql-transport-ws socket with the Authorization value
// given, closed when the test ends.
func (b *bundle) dialWS(t *testing.T, ctx context.Context, authorization string) *streamtest.WS {
	t.Helper()
	ws, err := streamtest.DialWS(ctx, b.srv.URL, authorization)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Conn.CloseNow() })
	return ws
}

// closeCode reads ws until it closes and returns the close code; messages
// of other kinds are skipped.
func closeCode(ctx context.Context, ws *streamtest.WS) int {
	for {
		if _, err := ws.Next(ctx); err != nil {
			return streamtest.CloseCode(err)
		}
	}
}

const createOverSocket = `mutation($key: String!) { createPayment(idempotencyKey: $key,
  input: {clientId: "shop-revoked", amount: "5.00", currency: "BRL", method: PIX}) { payment { id } } }`

// TestEveryOperationOnASocketChecksTheToken: a socket whose token is
// revoked may not run one more operation: the first one after the
// revocation closes it with 4403, and nothing is created. (The periodic
// check is set far off here, so that the operation is what finds out.)
func TestEveryOperationOnASocketChecksTheToken(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db, withGraphQL(func(o *graph.Options) { o.RecheckEvery = time.Hour }))
		id, secret := b.revocable(t, "shop-revoked")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ws := b.dialWS(t, ctx, "Bearer "+secret)
		if err := ws.Subscribe(ctx, "1", createOverSocket, map[string]any{"key": "before-revocation"}); err != nil {
			t.Fatal(err)
		}
		if m, err := ws.Next(ctx); err != nil || m.Type != "next" || strings.Contains(string(m.Payload), "errors") {
			t.Fatalf("create before the revocation: %+v, %v", m, err)
		}

		b.revoke(t, id)
		if err := ws.Subscribe(ctx, "2", createOverSocket, map[string]any{"key": "after-revocation"}); err != nil {
			t.Fatal(err)
		}
		if code := closeCode(ctx, ws); code != graph.CloseForbidden {
			t.Errorf("an operation after the revocation: the socket closed with %d, want 4403", code)
		}
		var n int64
		if err := db.Gorm.Table("payments").Where("idempotency_key = ?", "after-revocation").Count(&n).Error; err != nil || n != 0 {
			t.Errorf("%d payments made after the revocation (%v)", n, err)
		}
	})
}

// TestRevocationEndsOpenSubscriptions: open subscriptions of a revoked
// token end without any operation: the WebSocket closes with 4403, the SSE
// stream ends with an UNAUTHENTICATED error, then "complete".
func TestRevocationEndsOpenSubscriptions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db, withGraphQL(func(o *graph.Options) { o.RecheckEvery = 20 * time.Millisecond }))
		id, secret := b.revocable(t, "shop-revoked")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ws := b.dialWS(t, ctx, "Bearer "+secret)
		if err := ws.Subscribe(ctx, "1", streamtest.EventsQuery, nil); err != nil {
			t.Fatal(err)
		}
		stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+secret, streamtest.EventsQuery, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		for deadline := time.Now().Add(10 * time.Second); b.ev.Subscribers() != 2; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d subscriptions follow live events after 10 s, want 2", b.ev.Subscribers())
			}
		}
		b.create(t, "live-before", input("shop-revoked", "1.00", "BRL", "PIX"))
		if e, err := ws.NextEvent(ctx); err != nil || e.IdempotencyKey != "live-before" {
			t.Fatalf("WebSocket, before the revocation: %+v, %v", e, err)
		}
		if e, err := stream.NextEvent(); err != nil || e.IdempotencyKey != "live-before" {
			t.Fatalf("SSE, before the revocation: %+v, %v", e, err)
		}

		b.revoke(t, id)
		if code := closeCode(ctx, ws); code != graph.CloseForbidden {
			t.Errorf("WebSocket: closed with %d after the revocation, want 4403", code)
		}
		event, data, err := stream.Next()
		var resp struct {
			Errors []struct{ Extensions struct{ Code string } }
		}
		if err != nil || event != "next" || json.Unmarshal(data, &resp) != nil || len(resp.Errors) != 1 ||
			resp.Errors[0].Extensions.Code != "UNAUTHENTICATED" {
			t.Errorf("SSE after the revocation: %s %s (%v), want an UNAUTHENTICATED error", event, data, err)
		}
		if event, _, err := stream.Next(); event != "complete" {
			t.Errorf("SSE after the error: %q (%v), want complete", event, err)
		}
	})
}

// TestSocketsFollowTheTokenCache: a socket's checks go through the token
// cache HTTP uses. Right after a revocation made elsewhere (another
// server, the CLI) the cached token still works on a socket as over HTTP;
// once the cache entry would expire before the next periodic check, the
// socket is closed with 4403, within the cache lifetime that HTTP requests
// take to notice. (The revoking server forgets its entry at once:
// apitoken's TestRevocationEndsAtOnceOnTheRevokingServer.)
func TestSocketsFollowTheTokenCache(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		const ttl, every = 10 * time.Second, 50 * time.Millisecond
		clock := stripedouble.NewManualClock(time.Now())
		b := setupEvents(t, db, withGraphQL(func(o *graph.Options) { o.RecheckEvery = every }), func(d *httpapi.Deps) {
			d.Tokens = apitoken.NewStore(db.Gorm, apitoken.Options{CacheTTL: ttl, Now: clock.Now})
		})
		id, secret := b.revocable(t, "shop-revoked")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ws := b.dialWS(t, ctx, "Bearer "+secret) // cached now
		elsewhere := apitoken.NewStore(db.Gorm, apitoken.Options{CacheTTL: -1})
		t.Cleanup(elsewhere.Close)
		if _, err := elsewhere.Revoke(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		if err := ws.Subscribe(ctx, "1", `{ payments(first: 1) { edges { cursor } } }`, nil); err != nil {
			t.Fatal(err)
		}
		if m, err := ws.Next(ctx); err != nil || m.Type != "next" || strings.Contains(string(m.Payload), "errors") {
			t.Fatalf("a query while the token is cached: %+v, %v", m, err)
		}

		clock.Add(ttl - every/2)
		res, _ := b.raw(t, http.MethodPost, "/graphql", http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}},
			`{"query": "{ __typename }"}`)
		if res.StatusCode != http.StatusOK {
			t.Errorf("HTTP within the cache lifetime: %d, want 200 (cached, as the socket is)", res.StatusCode)
		}
		if code := closeCode(ctx, ws); code != graph.CloseForbidden {
			t.Errorf("the socket closed with %d when its cache entry would expire before the next check, want 4403", code)
		}
		clock.Add(every)
		res, _ = b.raw(t, http.MethodPost, "/graphql", http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}},
			`{"query": "{ __typename }"}`)
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("HTTP past the cache lifetime: %d, want 401", res.StatusCode)
		}
	})
}

// TestSubscriptionCaps: subscriptions are capped per WebSocket, per token
// (WebSocket and SSE together) and per instance, each refusal a GraphQL
// error TOO_MANY_SUBSCRIPTIONS naming the cap; a subscription that ends
// makes room for another.
func TestSubscriptionCaps(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t), withGraphQL(func(o *graph.Options) {
		o.Subscriptions = graph.SubscriptionLimits{PerSocket: 2, PerToken: 3, PerInstance: 4}
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	first, second, other := b.socket(t, ctx, token), b.socket(t, ctx, token), b.socket(t, ctx, "other-token")
	live := 0
	// try subscribes and returns the cap that refused it, or "" once it
	// follows live events alongside the others open.
	try := func(s *socket, id string) string {
		t.Helper()
		if err := s.ws.Subscribe(ctx, id, streamtest.EventsQuery, nil); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case m := <-s.messages:
				if m.ID == id {
					return capOf(t, m.Payload)
				}
			case <-time.After(2 * time.Millisecond):
				if b.ev.Subscribers() == live+1 {
					live++
					return ""
				}
			case <-ctx.Done():
				t.Fatalf("subscription %s: neither refused nor live", id)
			}
		}
	}
	for _, tt := range []struct {
		s         *socket
		id, limit string
	}{
		{first, "a", ""}, {first, "b", ""}, {first, "c", "socket"},
		{second, "d", ""}, {second, "e", "token"},
		{other, "f", ""}, {other, "g", "instance"},
	} {
		if got := try(tt.s, tt.id); got != tt.limit {
			t.Errorf("subscription %s: refused by %q, want %q", tt.id, got, tt.limit)
		}
	}
	// SSE streams count against the token too.
	stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, streamtest.EventsQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	event, data, err := stream.Next()
	stream.Close()
	if err != nil || event != "next" || capOf(t, data) != "token" {
		t.Errorf("an SSE stream over the token's cap: %s %s (%v), want a TOO_MANY_SUBSCRIPTIONS error", event, data, err)
	}
	_, metrics := b.raw(t, http.MethodGet, "/metrics", http.Header{"Authorization": {"Bearer " + token}}, "")
	for _, want := range []string{`cmpay_subscriptions_refused_total{limit="socket"} 1`,
		`cmpay_subscriptions_refused_total{limit="token"} 2`, `cmpay_subscriptions_refused_total{limit="instance"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Ending one makes room, once it has ended on the server.
	if err := first.ws.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	live--
	for i := 0; ; i++ {
		got := try(first, "h"+strconv.Itoa(i))
		if got == "" {
			break
		}
		if got != "socket" && got != "instance" {
			t.Fatalf("after one ended: refused by %q", got)
		}
	}
}

// socket is a WebSocket whose messages are read as they come.
type socket struct {
	ws       *streamtest.WS
	messages chan streamtest.Message
}

func (b *bundle) socket(t *testing.T, ctx context.Context, tok string) *socket {
	t.Helper()
	ws := b.dialWS(t, ctx, "Bearer "+tok)
	s := &socket{ws: ws, messages: make(chan streamtest.Message, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := ws.Next(ctx)
			if err != nil {
				return
			}
			s.messages <- m
		}
	}()
	t.Cleanup(func() { _ = ws.Conn.CloseNow(); <-done }) // runs before dialWS's
	return s
}

// capOf is the cap a TOO_MANY_SUBSCRIPTIONS error names, "" for another
// answer; payload is an error message's list or a response.
func capOf(t *testing.T, payload []byte) string {
	t.Helper()
	type gqlError struct {
		Message    string
		Extensions struct {
			Code, Limit string
			Max         int
		}
	}
	var list []gqlError
	var resp struct{ Errors []gqlError }
	if json.Unmarshal(payload, &list) != nil {
		if json.Unmarshal(payload, &resp) != nil {
			t.Fatalf("not GraphQL errors: %s", payload)
		}
		list = resp.Errors
	}
	if len(list) == 0 {
		return ""
	}
	if e := list[0]; e.Extensions.Code != "TOO_MANY_SUBSCRIPTIONS" || e.Extensions.Max == 0 || e.Message == "" {
		t.Errorf("refusal: %s", payload)
	}
	return list[0].Extensions.Limit
}

// TestWebSocketUpgradeWithSeveralAuthorizations: an upgrade that brings
// two Authorization headers is refused as any request is: 400.
func TestWebSocketUpgradeWithSeveralAuthorizations(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.srv.URL, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"Authorization": {"Bearer " + token, "Bearer other-token"}},
	})
	if err == nil {
		_ = c.CloseNow()
		t.Fatal("the upgrade was accepted")
	}
	if res == nil || res.StatusCode != http.StatusBadRequest {
		t.Errorf("upgrade with two Authorization headers: %v, %v; want 400", res, err)
	}
}

// TestSubscriptionAfterIsChecked: `after` beyond the newest event is
// BAD_USER_INPUT, and the error for an overlong `after` does not repeat
// it.
func TestSubscriptionAfterIsChecked(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	b.create(t, "after-1", input("shop-after", "1.00", "BRL", "PIX"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws := b.dialWS(t, ctx, "Bearer "+token)
	for i, after := range []string{"2", "9223372036854775807", strings.Repeat("9", 50_000)} {
		id := strconv.Itoa(i)
		if err := ws.Subscribe(ctx, id, streamtest.EventsQuery, map[string]any{"after": after}); err != nil {
			t.Fatal(err)
		}
		m, err := ws.Next(ctx)
		for err == nil && m.ID != id { // the previous one's complete
			m, err = ws.Next(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m.Payload), "BAD_USER_INPUT") || len(m.Payload) > 1000 {
			t.Errorf("after of %d characters: %s %d bytes %.300s", len(after), m.Type, len(m.Payload), m.Payload)
		}
	}
}

// TestWebSocketsAreCapped: the WebSockets past connection_init are capped
// per token and per instance by the subscriptions' caps (a socket is kept
// for its subscriptions, and one holds at least one); one over a cap
// closes with 1013, try again later, and is counted by its cap in
// cmpay_websockets_refused_total; one that closes makes room.
// Without the caps one token opened 5,000 sockets holding no subscription,
// each a file descriptor and some 44 KB, until the process had none left.
func TestWebSocketsAreCapped(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t), withGraphQL(func(o *graph.Options) {
		o.Subscriptions = graph.SubscriptionLimits{PerToken: 2, PerInstance: 3}
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// refusal opens a socket with tok and returns the code it closed
	// with, or 0 when it was accepted (and is kept until the test ends).
	refusal := func(tok string) int {
		t.Helper()
		ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+tok)
		if err != nil {
			return streamtest.CloseCode(err)
		}
		t.Cleanup(func() { _ = ws.Conn.CloseNow() })
		return 0
	}
	first := b.dialWS(t, ctx, "Bearer "+token)
	b.dialWS(t, ctx, "Bearer "+token)
	if code := refusal(token); code != int(websocket.StatusTryAgainLater) {
		t.Errorf("a token's third socket, over its cap of 2: close code %d, want 1013", code)
	}
	b.dialWS(t, ctx, "Bearer other-token")
	_, managed := b.revocable(t, "client-c")
	if code := refusal(managed); code != int(websocket.StatusTryAgainLater) {
		t.Errorf("the instance's fourth socket, over its cap of 3: close code %d, want 1013", code)
	}
	b.metricsHave(t, ctx, `cmpay_websockets_refused_total{limit="token"} 1`, `cmpay_websockets_refused_total{limit="instance"} 1`)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	for code := refusal(token); code != 0; code = refusal(token) {
		if code != int(websocket.StatusTryAgainLater) || ctx.Err() != nil {
			t.Fatalf("after one of the token's sockets closed: close code %d (%v)", code, ctx.Err())
		}
	}
}
