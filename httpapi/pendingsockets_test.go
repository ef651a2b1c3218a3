package httpapi_test

import (
	"context"
	"encoding/json"
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

// wantRefused checks that an upgrade from addr is answered status with a
// problem of the code given and a Retry-After.
func (b *bundle) wantRefused(t *testing.T, ctx context.Context, addr string, status int, code string) {
	t.Helper()
	c, res, body := b.upgrade(t, ctx, addr, nil)
	if c != nil {
		t.Fatalf("upgrade from %s accepted, want %d", addr, status)
	}
	var problem struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	if res.StatusCode != status || json.Unmarshal(body, &problem) != nil || problem.Status != status || problem.Code != code {
		t.Errorf("upgrade from %s: %d %s, want %d with a problem coded %s", addr, res.StatusCode, body, status, code)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if ra := res.Header.Get("Retry-After"); ra != "3" {
		t.Errorf("Retry-After %q, want 3 (the init timeout)", ra)
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

// TestPendingSocketsPerAddress: past the cap, an address's upgrades are
// refused with 429 while another address, and an upgrade with a valid
// token in its header, still connect; connection_init, with a good token
// or a bad one, frees the slot at once.
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
	b.wantRefused(t, ctx, flooder, http.StatusTooManyRequests, "RATE_LIMITED")
	b.mustUpgrade(t, ctx, other, nil)
	b.mustUpgrade(t, ctx, flooder, http.Header{"Authorization": {"Bearer " + token}})

	if typ, code := initialize(t, ctx, pending[0], "Bearer "+token); typ != "connection_ack" {
		t.Fatalf("connection_init with a good token: %q, closed %d", typ, code)
	}
	b.mustUpgrade(t, ctx, flooder, nil) // the slot init freed
	b.wantRefused(t, ctx, flooder, http.StatusTooManyRequests, "RATE_LIMITED")

	if _, code := initialize(t, ctx, pending[1], "Bearer wrong"); code != graph.CloseForbidden {
		t.Fatalf("connection_init with a bad token: closed %d, want 4403", code)
	}
	b.mustUpgrade(t, ctx, flooder, nil) // the slot the bad init freed
	b.wantRefused(t, ctx, flooder, http.StatusTooManyRequests, "RATE_LIMITED")

}

// TestPendingSocketClosedFreesItsSlot: a socket closed before
// connection_init gives its slot back, once: the address may open one
// more, not two.
func TestPendingSocketClosedFreesItsSlot(t *testing.T) {
	t.Parallel()
	b := pendingSurface(t, 2, 100)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const addr = "203.0.113.5"
	first := b.mustUpgrade(t, ctx, addr, nil)
	b.mustUpgrade(t, ctx, addr, nil)
	b.wantRefused(t, ctx, addr, http.StatusTooManyRequests, "RATE_LIMITED")

	if err := first.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	// The server notices the close on its own time: try until it has.
	for {
		c, res, body := b.upgrade(t, ctx, addr, nil)
		if c != nil {
			break
		}
		if res.StatusCode != http.StatusTooManyRequests || ctx.Err() != nil {
			t.Fatalf("after a close: %d %s", res.StatusCode, body)
		}
	}
	b.wantRefused(t, ctx, addr, http.StatusTooManyRequests, "RATE_LIMITED")
}

// TestPendingSocketsPerInstance: past the instance's cap, any address is
// refused with 503, a token in the header is not.
func TestPendingSocketsPerInstance(t *testing.T) {
	t.Parallel()
	b := pendingSurface(t, 10, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b.mustUpgrade(t, ctx, "192.0.2.1", nil)
	b.mustUpgrade(t, ctx, "192.0.2.2", nil)
	b.wantRefused(t, ctx, "192.0.2.3", http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	c := b.mustUpgrade(t, ctx, "192.0.2.3", http.Header{"Authorization": {"Bearer " + token}})
	if typ, code := initialize(t, ctx, c, ""); typ != "connection_ack" {
		t.Fatalf("connection_init on a socket whose header had the token: %q, closed %d", typ, code)
	}
	_, text := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Bearer " + token}}, "")
	for _, want := range []string{
		"cmpay_websockets_waiting_for_init 2",
		`cmpay_websockets_refused_total{limit="instance"} 1`,
		`cmpay_websockets_refused_total{limit="address"} 0`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
