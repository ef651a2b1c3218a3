// Package streamtest is a small GraphQL subscription client for tests:
// graphql-transport-ws over WebSocket and graphql-sse (distinct connections
// mode) over Server-Sent Events, as a browser library would speak them.
package streamtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// EventsQuery subscribes to payment events with every variable optional.
const EventsQuery = `subscription Events($client: ID, $payment: ID, $after: ID) {
  paymentEvents(clientId: $client, paymentId: $payment, after: $after) {
    id type at idempotencyKey
    payment { id clientId status amount capturedAmount refundedAmount }
    refund { id amount }
  }
}`

// Event is a PaymentEvent as EventsQuery selects it.
type Event struct {
	ID             string
	Type           string
	At             string
	IdempotencyKey string
	Payment        struct {
		ID, ClientID, Status, Amount, CapturedAmount, RefundedAmount string
	}
	Refund *struct{ ID, Amount string }
}

// Message is one graphql-transport-ws message.
type Message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// WS is a graphql-transport-ws connection.
type WS struct {
	Conn *websocket.Conn
}

// DialWS connects to baseURL's /graphql and sends connection_init with the
// payload {"Authorization": authorization} (none when empty), then waits
// for connection_ack. A refused init comes back as the close error.
func DialWS(ctx context.Context, baseURL, authorization string) (*WS, error) {
	u := "ws" + strings.TrimPrefix(baseURL, "http") + "/graphql"
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	ws := &WS{Conn: c}
	init := Message{Type: "connection_init"}
	if authorization != "" {
		init.Payload, _ = json.Marshal(map[string]string{"Authorization": authorization})
	}
	if err := wsjson.Write(ctx, c, init); err != nil {
		return nil, err
	}
	for {
		m, err := ws.read(ctx)
		if err != nil {
			return nil, err
		}
		if m.Type == "connection_ack" {
			return ws, nil
		}
	}
}

// CloseCode is the WebSocket close code err carries, or -1.
func CloseCode(err error) int { return int(websocket.CloseStatus(err)) }

// Subscribe starts subscription id.
func (ws *WS) Subscribe(ctx context.Context, id, query string, vars map[string]any) error {
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	return wsjson.Write(ctx, ws.Conn, Message{ID: id, Type: "subscribe", Payload: payload})
}

// Stop ends subscription id.
func (ws *WS) Stop(ctx context.Context, id string) error {
	return wsjson.Write(ctx, ws.Conn, Message{ID: id, Type: "complete"})
}

func (ws *WS) read(ctx context.Context) (Message, error) {
	for {
		var m Message
		if err := wsjson.Read(ctx, ws.Conn, &m); err != nil {
			return Message{}, err
		}
		switch m.Type {
		case "ping":
			if err := wsjson.Write(ctx, ws.Conn, Message{Type: "pong"}); err != nil {
				return Message{}, err
			}
		case "pong", "ka":
		default:
			return m, nil
		}
	}
}

// Next returns the next next, error or complete message.
func (ws *WS) Next(ctx context.Context) (Message, error) { return ws.read(ctx) }

// NextEvent returns the next payment event; an error or complete message
// is an error.
func (ws *WS) NextEvent(ctx context.Context) (Event, error) {
	m, err := ws.read(ctx)
	if err != nil {
		return Event{}, err
	}
	if m.Type != "next" {
		return Event{}, fmt.Errorf("%s message: %s", m.Type, m.Payload)
	}
	return decodeEvent(m.Payload)
}

// Close closes the connection normally.
func (ws *WS) Close() error { return ws.Conn.Close(websocket.StatusNormalClosure, "") }

func decodeEvent(payload []byte) (Event, error) {
	var resp struct {
		Data struct {
			PaymentEvents *Event
		}
		Errors []json.RawMessage
	}
	if err := json.Unmarshal(payload, &resp); err != nil {
		return Event{}, err
	}
	if len(resp.Errors) > 0 || resp.Data.PaymentEvents == nil {
		return Event{}, fmt.Errorf("not an event: %s", payload)
	}
	return *resp.Data.PaymentEvents, nil
}

// SSE is a graphql-sse stream in distinct connections mode: one POST, one
// subscription.
type SSE struct {
	Response *http.Response
	r        *bufio.Reader
}

// DialSSE POSTs the subscription to baseURL's /graphql with Accept:
// text/event-stream and the Authorization header given.
func DialSSE(ctx context.Context, client *http.Client, baseURL, authorization, query string, vars map[string]any) (*SSE, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	return &SSE{Response: res, r: bufio.NewReader(res.Body)}, nil
}

// Next reads the next event of the stream (comments skipped).
func (s *SSE) Next() (event string, data []byte, err error) {
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && event != "" {
				return event, data, nil
			}
			return "", nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if event != "" || data != nil {
				return event, data, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimSpace(strings.TrimPrefix(line, "data:"))...)
		}
	}
}

// NextEvent reads the next "next" event as a payment event.
func (s *SSE) NextEvent() (Event, error) {
	event, data, err := s.Next()
	if err != nil {
		return Event{}, err
	}
	if event != "next" {
		return Event{}, fmt.Errorf("%s event: %s", event, data)
	}
	return decodeEvent(data)
}

// Close ends the stream.
func (s *SSE) Close() error { return s.Response.Body.Close() }
