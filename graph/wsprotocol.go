package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// graphql-transport-ws's close codes
// (https://github.com/enisdenjo/graphql-ws/blob/master/PROTOCOL.md). gqlgen's
// transport closes every protocol violation with 1002 or 1000, and takes a
// subscribe that reuses an active id as a new operation; protocolConn
// closes them with the codes the protocol gives.
const (
	// CloseBadMessage: a message that is not JSON, of an unknown type, or
	// without the id its type needs.
	CloseBadMessage = 4400
	// CloseUnauthorized: a subscribe before connection_init was accepted.
	CloseUnauthorized = 4401
	// CloseForbidden: connection_init's credentials are refused, or were
	// revoked since (graphql-transport-ws's 4403 Forbidden).
	CloseForbidden = 4403
	// CloseInitTimeout: no connection_init within the init timeout.
	CloseInitTimeout = 4408
	// CloseSubscriberExists: a subscribe with the id of an operation still
	// running.
	CloseSubscriberExists = 4409
	// CloseTooManyInits: a second connection_init.
	CloseTooManyInits = 4429
)

// DefaultInitTimeout is how long a WebSocket may take to send
// connection_init unless Options.InitTimeout says otherwise. Clients send
// it as soon as the socket opens (within milliseconds); 3 s, the
// graphql-ws reference server's default, leaves room for a slow mobile
// link while a socket that says nothing holds its slot for little time.
const DefaultInitTimeout = 3 * time.Second

const transportWS = "graphql-transport-ws"

// errProtocol ends gqlgen's read loop after protocolConn closed the socket.
var errProtocol = errors.New("protocol violation: socket closed")

// protocolImplementation accepts sockets as gqlgen's coder/websocket
// adapter does, wrapped in a protocolConn.
type protocolImplementation struct {
	transport.CoderWebsocketImplementation
	initTimeout  time.Duration
	writeTimeout time.Duration
	onCut        func(transport string) // Options.OnStreamCut
}

func (p protocolImplementation) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	inner, err := p.CoderWebsocketImplementation.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	pc := &protocolConn{WebsocketConn: inner, strict: inner.Subprotocol() == transportWS, active: map[string]struct{}{},
		writeTimeout: p.writeTimeout, cut: onceFunc(p.onCut, "websocket")}
	pc.initTimer = time.AfterFunc(p.initTimeout, func() {
		code := transport.WebsocketCloseProtocolError // graphql-ws has no code of its own
		if pc.strict {
			code = CloseInitTimeout
		}
		pc.closeWith(code, "Connection initialisation timeout")
	})
	if c := connectionOf(r.Context()); c != nil {
		c.mu.Lock()
		c.closeSocket, c.dropSocket = pc.closeWith, pc.drop
		c.mu.Unlock()
	}
	return pc, nil
}

// protocolConn is the socket under gqlgen's WebSocket transport: it reads
// each client message before gqlgen does and, on graphql-transport-ws,
// closes the socket with the protocol's code when the message breaks the
// protocol; and it answers ping before connection_init, which gqlgen
// refuses. It knows which operation ids are active from the subscribes it
// reads and the complete and error messages either side sends.
type protocolConn struct {
	transport.WebsocketConn
	strict    bool // graphql-transport-ws: the protocol's rules apply
	initTimer *time.Timer
	// writeTimeout is how long one message may take to leave (see
	// WriteJSON); zero waits as long as it takes.
	writeTimeout time.Duration
	cut          func() // counts the socket cut by writeTimeout, once

	mu     sync.Mutex
	inited bool
	active map[string]struct{}
	closed bool
}

// clientMessage is what protocolConn reads of a message.
type clientMessage struct {
	Type    string          `json:"type"`
	ID      *string         `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

func (c *protocolConn) NextReader() (int, io.Reader, error) {
	for {
		kind, r, err := c.WebsocketConn.NextReader()
		if err != nil {
			return kind, r, err
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return kind, nil, err
		}
		var m clientMessage
		if json.Unmarshal(data, &m) != nil {
			if c.strict {
				return c.violation(CloseBadMessage, "Invalid message received")
			}
			return kind, bytes.NewReader(data), nil // gqlgen answers it
		}
		v := c.admit(m)
		switch {
		case v.code != 0:
			return c.violation(v.code, v.reason)
		case v.pong:
			if err := c.WebsocketConn.WriteJSON(map[string]string{"type": "pong"}); err != nil {
				return 0, nil, err
			}
		case v.pass:
			return kind, bytes.NewReader(data), nil
		}
	}
}

// verdict is what becomes of a client message: passed on to gqlgen,
// answered with pong here, dropped, or the close code and reason it
// breaks the protocol with.
type verdict struct {
	pass, pong bool
	code       int
	reason     string
}

var passOn = verdict{pass: true}

// admit applies the protocol to a client message.
func (c *protocolConn) admit(m clientMessage) verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Type == "connection_init" {
		if !initPayload(m.Payload) {
			// gqlgen drops such a socket without closing it: it would
			// stay open, unread and uncounted, for as long as the client
			// liked (websocketTransport.Do closes whatever it leaves).
			code := transport.WebsocketCloseProtocolError
			if c.strict {
				code = CloseBadMessage
			}
			return verdict{code: code, reason: "Invalid message received: connection_init's payload must be an object"}
		}
		if c.inited && c.strict {
			return verdict{code: CloseTooManyInits, reason: "Too many initialisation requests"}
		}
		c.inited = true
		c.initTimer.Stop()
		return passOn
	}
	if !c.strict {
		return passOn
	}
	id := ""
	if m.ID != nil {
		id = *m.ID
	}
	switch m.Type {
	case "ping", "pong":
		if !c.inited {
			// gqlgen takes only connection_init first; the protocol
			// allows ping at any time.
			return verdict{pong: m.Type == "ping"}
		}
		return passOn
	case "subscribe":
		switch {
		case !c.inited:
			return verdict{code: CloseUnauthorized, reason: "Unauthorized"}
		case id == "":
			return verdict{code: CloseBadMessage, reason: "Invalid message received: a subscribe needs an id"}
		}
		if _, ok := c.active[id]; ok {
			return verdict{code: CloseSubscriberExists, reason: "Subscriber for " + clip(id) + " already exists"}
		}
		c.active[id] = struct{}{}
		return passOn
	case "complete":
		if id == "" {
			return verdict{code: CloseBadMessage, reason: "Invalid message received: a complete needs an id"}
		}
		delete(c.active, id)
		return passOn
	}
	return verdict{code: CloseBadMessage, reason: "Invalid message received"}
}

// initPayload reports whether a message's payload, valid JSON, is absent,
// null or an object: what connection_init may carry.
func initPayload(payload json.RawMessage) bool {
	if len(bytes.TrimSpace(payload)) == 0 {
		return true
	}
	var p transport.InitPayload // as gqlgen decodes it: {"x": 1e999} is an object it cannot
	return json.Unmarshal(payload, &p) == nil
}

func (c *protocolConn) violation(code int, reason string) (int, io.Reader, error) {
	c.closeWith(code, reason)
	return 0, nil, errProtocol
}

// WriteJSON sends a server message. The operation a complete or error
// message ends is no longer active once it is sent, so a client may reuse
// its id as soon as it reads it.
func (c *protocolConn) WriteJSON(v any) error {
	if c.strict {
		if typ, id := messageTypeAndID(v); typ == "complete" || typ == "error" {
			c.mu.Lock()
			delete(c.active, id)
			c.mu.Unlock()
		}
	}
	if c.writeTimeout > 0 {
		// gqlgen writes without a deadline: a client that stopped reading,
		// its connection still open, would hold the write, the socket and
		// its subscriptions for ever. One that takes nothing for this long
		// has its connection closed, which fails the write.
		stalled := time.AfterFunc(c.writeTimeout, func() { c.cut(); _ = c.Close() })
		defer stalled.Stop()
	}
	return c.WebsocketConn.WriteJSON(v)
}

// messageTypeAndID reads the Type and ID fields of gqlgen's outgoing
// graphql-transport-ws message (a pointer to a struct of its own, not
// exported); "" when v has no such fields.
func messageTypeAndID(v any) (typ, id string) {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() != reflect.Struct {
		return "", ""
	}
	if f := rv.FieldByName("Type"); f.Kind() == reflect.String {
		typ = f.String()
	}
	if f := rv.FieldByName("ID"); f.Kind() == reflect.String {
		id = f.String()
	}
	return typ, id
}

// WriteClose is gqlgen's own close: the first close, its or ours, counts.
func (c *protocolConn) WriteClose(code int, reason string) error {
	c.closeWith(code, reason)
	return nil
}

// closeWith closes the socket with code, unless it is closed already.
func (c *protocolConn) closeWith(code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	_ = c.WebsocketConn.WriteClose(code, reason)
}

func (c *protocolConn) Close() error {
	c.initTimer.Stop()
	return c.WebsocketConn.Close()
}

// drop closes the socket, with a close frame (1001, going away) if none
// was sent: what gqlgen's handler left open when it returned.
func (c *protocolConn) drop() {
	const goingAway = 1001
	c.closeWith(goingAway, "Going away")
	_ = c.Close()
}

// SetReadLimit and SetReadDeadline pass gqlgen's settings on to the
// socket.
func (c *protocolConn) SetReadLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

func (c *protocolConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}
