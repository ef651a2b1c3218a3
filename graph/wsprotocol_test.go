package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// socketServer serves NewHandler with events running over SQLite; the one
// accepted credential is "Bearer good", and "Bearer unchecked" is one whose
// check fails (a database outage): neither accepted nor refused.
func socketServer(t *testing.T, opts Options) *httptest.Server {
	t.Helper()
	db := dbtest.SQLite(t)
	ev, err := events.New(db.Gorm, events.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ev.Stop)
	opts.Events = ev
	opts.Authenticate = func(ctx context.Context, authorization string) (context.Context, error) {
		switch authorization {
		case "Bearer good":
		case "Bearer unchecked":
			return ctx, errors.New("the token store is unreachable")
		default:
			return ctx, fmt.Errorf("refused: %w", ErrRefused)
		}
		return auth.WithPrincipal(ctx, auth.FullAccess(auth.KindEnvToken, "test")), nil
	}
	opts.Recheck = func(context.Context, string, time.Duration) error { return nil }
	srv := httptest.NewServer(NewHandler(mustService(t, db.Gorm), opts))
	t.Cleanup(srv.Close)
	return srv
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func dialTransportWS(t *testing.T, ctx context.Context, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), &websocket.DialOptions{Subprotocols: []string{transportWS}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// readUntil reads until a message of one of the types comes, and returns
// its type, or until the socket closes, and returns its close code.
func readUntil(ctx context.Context, c *websocket.Conn, types ...string) (typ string, code websocket.StatusCode) {
	for {
		var m wsMessage
		if err := wsjson.Read(ctx, c, &m); err != nil {
			return "", websocket.CloseStatus(err)
		}
		for _, want := range types {
			if m.Type == want {
				return m.Type, -1
			}
		}
	}
}

const eventsSubscription = `{"query": "subscription { paymentEvents { id } }"}`

// TestTransportWSCloseCodes: each breach of graphql-transport-ws closes
// the socket with the code its protocol document gives, not gqlgen's 1002
// or 1000, and a subscribe that reuses an active id is refused (4409)
// rather than taken as a second operation.
func TestTransportWSCloseCodes(t *testing.T) {
	t.Parallel()
	opts := DefaultOptions()
	opts.InitTimeout = 100 * time.Millisecond
	srv := socketServer(t, opts)
	initMsg := wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer good"}`)}
	subscribe := func(id string) wsMessage {
		return wsMessage{ID: id, Type: "subscribe", Payload: json.RawMessage(eventsSubscription)}
	}
	for _, tt := range []struct {
		name string
		send []any // after the socket opens
		want websocket.StatusCode
	}{
		{"subscribe before connection_init", []any{subscribe("1")}, CloseUnauthorized},
		{"a second connection_init", []any{initMsg, initMsg}, CloseTooManyInits},
		{"a subscribe with an active id", []any{initMsg, subscribe("1"), subscribe("1")}, CloseSubscriberExists},
		{"not JSON", []any{initMsg, []byte(`{"type": "subscribe",`)}, CloseBadMessage},
		{"an unknown type", []any{initMsg, wsMessage{Type: "next", ID: "1"}}, CloseBadMessage},
		{"a subscribe without an id", []any{initMsg, wsMessage{Type: "subscribe", Payload: json.RawMessage(eventsSubscription)}}, CloseBadMessage},
		{"a connection_init whose payload is not an object", []any{[]byte(`{"type": "connection_init", "payload": [1]}`)}, CloseBadMessage},
		{"a connection_init whose object gqlgen cannot decode", []any{[]byte(`{"type": "connection_init", "payload": {"x": 1e999}}`)}, CloseBadMessage},
		{"no connection_init in time", nil, CloseInitTimeout},
		{"refused credentials", []any{wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer bad"}`)}}, CloseForbidden},
		// Not a verdict: 4403 would tell a client to give up on a good token.
		{"credentials that could not be checked", []any{wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer unchecked"}`)}}, websocket.StatusTryAgainLater},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			c := dialTransportWS(t, ctx, srv.URL)
			for _, m := range tt.send {
				var err error
				if raw, ok := m.([]byte); ok {
					err = c.Write(ctx, websocket.MessageText, raw)
				} else {
					err = wsjson.Write(ctx, c, m)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, code := readUntil(ctx, c); code != tt.want {
				t.Errorf("closed with %d, want %d", code, tt.want)
			}
			// The client hears only "try again later": the operator needs
			// the reason.
			if tt.want == websocket.StatusTryAgainLater && initChecks.Failing() == 0 {
				t.Error("a check that could not be made was not logged")
			}
		})
	}
}

// TestTransportWSIdsAndPing: an id is free again once its operation
// completed, whichever side ended it; ping is answered before
// connection_init, as the protocol allows at any time.
func TestTransportWSIdsAndPing(t *testing.T) {
	t.Parallel()
	srv := socketServer(t, DefaultOptions())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	c := dialTransportWS(t, ctx, srv.URL)
	send := func(m wsMessage) {
		t.Helper()
		if err := wsjson.Write(ctx, c, m); err != nil {
			t.Fatal(err)
		}
	}
	send(wsMessage{Type: "ping"})
	if typ, code := readUntil(ctx, c, "pong"); typ != "pong" {
		t.Fatalf("ping before connection_init: closed with %d, want pong", code)
	}
	send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{"Authorization": "Bearer good"}`)})
	if typ, code := readUntil(ctx, c, "connection_ack"); typ == "" {
		t.Fatalf("connection_init: closed with %d", code)
	}
	// A query completes by itself; its id may be used again.
	for range 2 {
		send(wsMessage{ID: "q", Type: "subscribe", Payload: json.RawMessage(`{"query": "{ __typename }"}`)})
		if typ, code := readUntil(ctx, c, "complete"); typ == "" {
			t.Fatalf("query: closed with %d", code)
		}
	}
	// A subscription the client completed frees its id.
	send(wsMessage{ID: "s", Type: "subscribe", Payload: json.RawMessage(eventsSubscription)})
	send(wsMessage{ID: "s", Type: "complete"})
	send(wsMessage{ID: "s", Type: "subscribe", Payload: json.RawMessage(eventsSubscription)})
	send(wsMessage{ID: "q", Type: "subscribe", Payload: json.RawMessage(`{"query": "{ __typename }"}`)})
	if typ, code := readUntil(ctx, c, "next"); typ == "" {
		t.Fatalf("after a completed subscription's id was used again: closed with %d", code)
	}
}
