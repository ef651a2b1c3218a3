package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
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

// WebSockets that have not sent connection_init yet are capped per client
// address and per instance; a slot comes free at connection_init (good
// token or bad) or when the socket ends. The storage plays no part here, so
// these run on SQLite alone.

// pendingSurface serves the API behind a trusted proxy (this test), so
// that X-Forwarded-For tells clients apart, with the caps given.
func pendingSurface(t *testing.T, perAddress, perInstance int) *bundle {
	t.Helper()
	return setup(t, dbtest.Open(t, "sqlite"), func(d *httpapi.Deps) {
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		d.PendingSockets = httpapi.PendingSocketLimits{PerAddress: perAddress, PerInstance: perInstance}
	})
}

// upgrade opens a graphql-transport-ws socket from addr without sending
// anything on it; the socket is closed when the test ends. On a refusal it
// returns the response instead, its body read.
func (b *bundle) upgrade(t *testing.T, ctx context.Context, addr string, header http.Header) (*websocket.Conn, *http.Response, []byte) {
	t.Helper()
	h := http.Header{"X-Forwarded-For": {addr}}
	for k, v := range header {
		h[k] = v
	}
	u := "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/graphql"
	c, res, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
	if err == nil {
		t.Cleanup(func() { _ = c.CloseNow() })
		return c, nil, nil
	}
	if res == nil {
		t.Fatalf("upgrade from %s: %v", addr, err)
	}
	body, _ := io.ReadAll(res.Body)
	return nil, res, body
}

// mustUpgrade is upgrade that must succeed.
func (b *bundle) mustUpgrade(t *testing.T, ctx context.Context, addr string, header http.Header) *websocket.Conn {
	t.Helper()
	c, res, body := b.upgrade(t, ctx, addr, header)
	if c == nil {
		t.Fatalf("upgrade from %s refused: %d %s", addr, res.StatusCode, body)
	}
	return c
}

// alive says whether c is still open: a socket that has not sent
// connection_init may still ping, and is answered pong.
func alive(t *testing.T, ctx context.Context, c *websocket.Conn) bool {
	t.Helper()
	if err := wsjson.Write(ctx, c, map[string]string{"type": "ping"}); err != nil {
		return false
	}
	var m streamtest.Message
	if err := wsjson.Read(ctx, c, &m); err != nil {
		return false
	}
	if m.Type != "pong" {
		t.Fatalf("ping answered %q", m.Type)
	}
	return true
}

// metricsHave waits until /metrics shows every line in want.
func (b *bundle) metricsHave(t *testing.T, ctx context.Context, want ...string) {
	t.Helper()
	for {
		_, text := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Bearer " + token}}, "")
		missing := ""
		for _, w := range want {
			if !strings.Contains(string(text), w+"\n") {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("metrics never showed %s", missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// initialize sends connection_init with authorization and returns the
// type of the server's answer, or the close code when it closes instead.
func initialize(t *testing.T, ctx context.Context, c *websocket.Conn, authorization string) (string, int) {
	t.Helper()
	if err := wsjson.Write(ctx, c, map[string]any{"type": "connection_init", "payload": map[string]string{"Authorization": authorization}}); err != nil {
		t.Fatal(err)
	}
	var m streamtest.Message
	if err := wsjson.Read(ctx, c, &m); err != nil {
		return "", streamtest.CloseCode(err)
	}
	return m.Type, 0
}

// TestPendingSocketsPerAddress: past an address's share, its oldest
// waiting socket is dropped for the new one, so a browser behind a
// flooder's address still gets in; other addresses, sockets that sent
// connection_init and upgrades with a token in their header are not
// touched; connection_init, with a good token or a bad one, frees a place
// at once.
func TestPendingSocketsPerAddress(t *testing.T) {
	t.Parallel()
	b := pendingSurface(t, 3, 100)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const flooder, other = "198.51.100.7", "198.51.100.8"
	var pending []*websocket.Conn
	for range 3 {
		pending = append(pending, b.mustUpgrade(t, ctx, flooder, nil))
	}
	elsewhere := b.mustUpgrade(t, ctx, other, nil)
	withHeader := b.mustUpgrade(t, ctx, flooder, http.Header{"Authorization": {"Bearer " + token}})

	browser := b.mustUpgrade(t, ctx, flooder, nil)
	if alive(t, ctx, pending[0]) {
		t.Fatal("a fourth waiting socket from one address: the oldest is still open")
	}
	if typ, code := initialize(t, ctx, browser, "Bearer "+token); typ != "connection_ack" {
		t.Fatalf("connection_init of the newest socket: %q, closed %d", typ, code)
	}
	for i, c := range []*websocket.Conn{pending[1], pending[2], elsewhere, withHeader} {
		if !alive(t, ctx, c) {
			t.Fatalf("socket %d was dropped", i)
		}
	}

	// pending[1] and [2] wait; the browser's init freed its place.
	if _, code := initialize(t, ctx, pending[1], "Bearer wrong"); code != graph.CloseForbidden {
		t.Fatalf("connection_init with a bad token: closed %d, want 4403", code)
	}
	b.mustUpgrade(t, ctx, flooder, nil)
	if !alive(t, ctx, pending[2]) {
		t.Fatal("a bad connection_init did not free its place: the oldest was dropped")
	}
	b.metricsHave(t, ctx, `cmpay_websockets_dropped_total{limit="address"} 1`, "cmpay_websockets_waiting_for_init 3")
}

// TestPendingSocketClosedFreesItsSlot: a socket closed before
// connection_init gives its place back, once: the address may open one
// more without dropping another, not two.
func TestPendingSocketClosedFreesItsSlot(t *testing.T) {
	t.Parallel()
	b := pendingSurface(t, 2, 100)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const addr = "203.0.113.5"
	first := b.mustUpgrade(t, ctx, addr, nil)
	second := b.mustUpgrade(t, ctx, addr, nil)
	if err := first.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	// The server notices the close on its own time.
	b.metricsHave(t, ctx, "cmpay_websockets_waiting_for_init 1")
	third := b.mustUpgrade(t, ctx, addr, nil)
	if !alive(t, ctx, second) {
		t.Fatal("a place freed by a close was not used: the oldest was dropped")
	}
	b.mustUpgrade(t, ctx, addr, nil)
	if alive(t, ctx, second) || !alive(t, ctx, third) {
		t.Fatal("the close freed two places")
	}
}

// TestPendingSocketsPerInstance: past the instance's cap, the instance's
// oldest waiting socket is dropped, whatever its address; a token in the
// header does not count.
func TestPendingSocketsPerInstance(t *testing.T) {
	t.Parallel()
	b := pendingSurface(t, 10, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	oldest := b.mustUpgrade(t, ctx, "192.0.2.1", nil)
	next := b.mustUpgrade(t, ctx, "192.0.2.2", nil)
	c := b.mustUpgrade(t, ctx, "192.0.2.3", http.Header{"Authorization": {"Bearer " + token}})
	if !alive(t, ctx, oldest) {
		t.Fatal("an upgrade with a token in its header took a waiting socket's place")
	}
	newest := b.mustUpgrade(t, ctx, "192.0.2.3", nil)
	if alive(t, ctx, oldest) || !alive(t, ctx, next) || !alive(t, ctx, newest) {
		t.Fatal("past the instance's cap, the oldest waiting socket was not the one dropped")
	}
	if typ, code := initialize(t, ctx, c, ""); typ != "connection_ack" {
		t.Fatalf("connection_init on a socket whose header had the token: %q, closed %d", typ, code)
	}
	b.metricsHave(t, ctx, "cmpay_websockets_waiting_for_init 2",
		`cmpay_websockets_dropped_total{limit="instance"} 1`, `cmpay_websockets_dropped_total{limit="address"} 0`)
}
