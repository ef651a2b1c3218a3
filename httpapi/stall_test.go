package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// smallSendBuffers accepts connections whose kernel send buffer is a few
// KB, so that a client that stops reading stalls the server's writes
// after a few events rather than after megabytes of them.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallServer serves the surface with a token's cap at one subscription,
// StreamWriteTimeout at 200 ms and small send buffers, over 200 events to
// replay: a client that stops reading stalls its stream's writes soon.
// The bundle reads the same handler's metrics.
func stallServer(t *testing.T) (*eventsBundle, *httptest.Server) {
	t.Helper()
	b := setupEvents(t, dbtest.SQLite(t), withGraphQL(func(o *graph.Options) {
		o.Subscriptions = graph.SubscriptionLimits{PerToken: 1}
		o.StreamWriteTimeout = 200 * time.Millisecond
	}))
	srv := httptest.NewUnstartedServer(b.handler)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	for i := range 200 {
		b.newPayment(t, "stall-client", "stall-"+strconv.Itoa(i), "10.00", true)
	}
	return b, srv
}

// TestStalledStreamIsCut: an SSE stream whose client stops reading is cut
// once a write has waited StreamWriteTimeout, and its subscription ends,
// giving back its place under the token's cap. Without a deadline the
// write waited for as long as the client kept the connection open: the
// stream held its place, a goroutine and a connection for ever, past the
// token's revocation too. The cut is counted in cmpay_streams_cut_total.
func TestStalledStreamIsCut(t *testing.T) {
	t.Parallel()
	b, srv := stallServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	// A client that asks for every event and reads none of them.
	stalled, err := smallReceiveBuffer.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	body, _ := json.Marshal(map[string]any{"query": streamtest.EventsQuery, "variables": map[string]any{"after": "0"}})
	request := "POST /graphql HTTP/1.1\r\nHost: cmpay\r\nAuthorization: Bearer " + token +
		"\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
	if _, err := stalled.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}

	// The token's one place comes free once the stalled stream is cut.
	for {
		stream, err := streamtest.DialSSE(ctx, srv.Client(), srv.URL, "Bearer "+token, streamtest.EventsQuery,
			map[string]any{"after": "0"})
		if err != nil {
			t.Fatalf("the stalled stream still holds the token's place: %v", err)
		}
		event, data, err := stream.Next()
		stream.Close()
		if err != nil {
			t.Fatalf("the stalled stream still holds the token's place: %v", err)
		}
		if event == "next" && capOf(t, data) == "" {
			// This stream got the place.
			b.metricsHave(t, ctx, `cmpay_streams_cut_total{transport="sse"} 1`, `cmpay_streams_cut_total{transport="websocket"} 0`)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the stalled stream still holds the token's place")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// smallReceiveBuffer dials connections whose kernel receive buffer is a few
// KB: a client that stops reading stops taking data soon.
var smallReceiveBuffer = &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) }); cerr != nil {
		return cerr
	}
	return err
}}

// TestStalledWebSocketIsCut: a WebSocket whose client stops reading is
// closed once a message has waited StreamWriteTimeout, giving back its
// place under the token's cap (and its subscriptions'), and is counted in
// cmpay_streams_cut_total. gqlgen writes without a deadline: the socket
// held its place for ever.
func TestStalledWebSocketIsCut(t *testing.T) {
	t.Parallel()
	b, srv := stallServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	// A client that subscribes to every event and reads none of them.
	client := &http.Client{Transport: &http.Transport{DialContext: smallReceiveBuffer.DialContext}}
	u := "ws" + srv.URL[len("http"):] + "/graphql"
	stalled, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: client, Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.CloseNow()
	init := streamtest.Message{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer ` + token + `"}`)}
	if err := wsjson.Write(ctx, stalled, init); err != nil {
		t.Fatal(err)
	}
	var ack streamtest.Message
	if err := wsjson.Read(ctx, stalled, &ack); err != nil || ack.Type != "connection_ack" {
		t.Fatalf("connection_init: %+v, %v", ack, err)
	}
	payload, _ := json.Marshal(map[string]any{"query": streamtest.EventsQuery, "variables": map[string]any{"after": "0"}})
	id := "stalled"
	if err := wsjson.Write(ctx, stalled, streamtest.Message{Type: "subscribe", ID: id, Payload: payload}); err != nil {
		t.Fatal(err)
	}

	// The token's one place comes free once the stalled socket is closed.
	for {
		ws, err := streamtest.DialWS(ctx, srv.URL, "Bearer "+token)
		if err == nil {
			_ = ws.Close()
			b.metricsHave(t, ctx, `cmpay_streams_cut_total{transport="websocket"} 1`, `cmpay_streams_cut_total{transport="sse"} 0`)
			return
		}
		if code := streamtest.CloseCode(err); code != int(websocket.StatusTryAgainLater) || ctx.Err() != nil {
			t.Fatalf("the stalled socket still holds the token's place: close code %d (%v)", code, err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the stalled socket still holds the token's place")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
