package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// Clients sharing an address (a NAT; every client behind a load balancer
// when TRUSTED_PROXIES is unset) share its failure budget: a stranger's bad
// tokens must not lock a subscriber with a valid one out. The test server's
// clients all come from 127.0.0.1.

// spendAddressBudget makes bad-token requests over HTTP until the address
// is answered 429, failing the test if it never is.
func spendAddressBudget(t *testing.T, b *eventsBundle, perMinute int) {
	t.Helper()
	for range perMinute + 1 {
		if res := b.do(t, "POST", "/graphql", "guess-not-a-token", "application/json", `{"query":"{ __typename }"}`); res.Status == http.StatusTooManyRequests {
			return
		}
	}
	t.Fatalf("%d bad tokens were never answered 429", perMinute+1)
}

// dialWithHeader upgrades to a graphql-transport-ws socket with an
// Authorization header on the upgrade request and an empty connection_init.
func dialWithHeader(ctx context.Context, baseURL, authorization string) (*streamtest.WS, *http.Response, error) {
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"},
		HTTPHeader:   http.Header{"Authorization": {authorization}},
	})
	if err != nil {
		return nil, res, err
	}
	ws := &streamtest.WS{Conn: c}
	if err := wsjson.Write(ctx, c, streamtest.Message{Type: "connection_init"}); err != nil {
		_ = c.CloseNow()
		return nil, res, err
	}
	for {
		m, err := ws.Next(ctx)
		if err != nil {
			_ = c.CloseNow()
			return nil, res, err
		}
		if m.Type == "connection_ack" {
			return ws, res, nil
		}
	}
}

// TestValidTokenSubscribesFromALimitedAddress: once the address has spent
// its failures, a valid token still opens a WebSocket (in connection_init,
// or on the upgrade request) and an SSE stream; a bad token on the upgrade
// request is refused there, with 429 as over HTTP.
func TestValidTokenSubscribesFromALimitedAddress(t *testing.T) {
	t.Parallel()
	const perMinute = 5
	b := setupEvents(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = perMinute })
	spendAddressBudget(t, b, perMinute)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
	if err != nil {
		t.Errorf("a valid token in connection_init from a limited address: %v, want connection_ack", err)
	} else {
		_ = ws.Conn.CloseNow()
	}

	ws, res, err := dialWithHeader(ctx, b.srv.URL, "Bearer "+token)
	if err != nil {
		t.Errorf("a valid token on the upgrade from a limited address: %v, %v; want 101 and connection_ack", status(res), err)
	} else {
		_ = ws.Conn.CloseNow()
	}

	if _, res, err = dialWithHeader(ctx, b.srv.URL, "Bearer guess-on-the-upgrade"); err == nil || status(res) != http.StatusTooManyRequests {
		t.Errorf("a bad token on the upgrade from a limited address: %v, %v; want 429", status(res), err)
	}

	stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, streamtest.EventsQuery, map[string]any{"after": "0"})
	if err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if stream.Response.StatusCode != http.StatusOK {
		t.Errorf("SSE with a valid token from a limited address: %d, want 200", stream.Response.StatusCode)
	}
}

// TestBadSocketTokensCountAgainstTheAddress: a bad token in connection_init
// closes the socket with 4403 and spends the address's budget, as a bad
// token over HTTP does; a bad one on the upgrade request is answered 401
// before it becomes a socket.
func TestBadSocketTokensCountAgainstTheAddress(t *testing.T) {
	t.Parallel()
	const perMinute = 3
	b := setupEvents(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = perMinute })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	if _, res, err := dialWithHeader(ctx, b.srv.URL, "Bearer guess-on-the-upgrade"); err == nil || status(res) != http.StatusUnauthorized {
		t.Errorf("a bad token on the upgrade: %v, %v; want 401", status(res), err)
	}
	for i := range perMinute {
		_, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer guess-in-init")
		if code := streamtest.CloseCode(err); code != graph.CloseForbidden {
			t.Fatalf("bad token %d in connection_init: %v (close %d), want 4403", i, err, code)
		}
	}
	if res := b.do(t, "POST", "/graphql", "guess-over-http", "application/json", `{"query":"{ __typename }"}`); res.Status != http.StatusTooManyRequests {
		t.Errorf("a bad token over HTTP after %d bad ones on sockets: %d, want 429", perMinute+1, res.Status)
	}
}

// status is res's status code, 0 without an answer.
func status(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}
