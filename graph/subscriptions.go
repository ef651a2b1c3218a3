package graph

import (
	"fmt"
	"sync"

	"github.com/vektah/gqlparser/v2/gqlerror"
)

// SubscriptionLimits caps the subscriptions open on one instance: on one
// WebSocket, of one token (over every WebSocket and SSE stream), and in
// all. Each open subscription holds a goroutine or three, a buffer of live
// events and a share of every event's fan-out; without caps, four sockets
// of one token took 3.6 GB with 40,000 of them. Zero fields take the
// defaults.
type SubscriptionLimits struct {
	PerSocket   int
	PerToken    int
	PerInstance int
}

// The default caps: far above what one client's dashboards and workers
// need (a subscription can filter by client and payment, or take them
// all), and, per instance, a few hundred MB at most.
const (
	DefaultSubscriptionsPerSocket   = 100
	DefaultSubscriptionsPerToken    = 200
	DefaultSubscriptionsPerInstance = 10_000
)

// codeTooManySubscriptions refuses a subscription over a cap.
const codeTooManySubscriptions = "TOO_MANY_SUBSCRIPTIONS"

func (l SubscriptionLimits) withDefaults() SubscriptionLimits {
	if l.PerSocket <= 0 {
		l.PerSocket = DefaultSubscriptionsPerSocket
	}
	if l.PerToken <= 0 {
		l.PerToken = DefaultSubscriptionsPerToken
	}
	if l.PerInstance <= 0 {
		l.PerInstance = DefaultSubscriptionsPerInstance
	}
	return l
}

// subscriptionCounter counts open subscriptions against the limits.
type subscriptionCounter struct {
	limits SubscriptionLimits
	// onRefused and onSocketRefused, if set, are told the limit of each
	// subscription and each WebSocket refused.
	onRefused, onSocketRefused func(limit string)

	mu      sync.Mutex
	total   int
	byToken map[string]int
	// sockets and socketsByToken count the WebSockets past connection_init
	// (takeSocket).
	sockets        int
	socketsByToken map[string]int
}

func newSubscriptionCounter(l SubscriptionLimits, onRefused, onSocketRefused func(limit string)) *subscriptionCounter {
	return &subscriptionCounter{limits: l.withDefaults(), onRefused: onRefused, onSocketRefused: onSocketRefused,
		byToken: map[string]int{}, socketsByToken: map[string]int{}}
}

// takeSocket counts c, a WebSocket past connection_init, against its
// token's and the instance's caps, which are the subscriptions' own: a
// socket is kept for the subscriptions it carries, and one carrying any
// holds a place under each cap already, so no socket that could be used is
// refused. Without it, sockets carrying none were bounded by nothing, each
// a file descriptor and some 44 KB. The connection gives its place back
// with releaseSocket.
func (s *subscriptionCounter) takeSocket(c *connection) error {
	limit, err := s.countSocket(c)
	if err != nil && s.onSocketRefused != nil {
		s.onSocketRefused(limit)
	}
	return err
}

// countSocket is takeSocket but for telling onSocketRefused: the error
// refusing c, and the cap (token, instance) that did.
// It runs once per socket: gqlgen calls InitFunc for the first
// connection_init only, and protocolConn closes on a second.
func (s *subscriptionCounter) countSocket(c *connection) (limit string, err error) {
	_, token := c.credentials()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.socketsByToken[token] >= s.limits.PerToken:
		return "token", fmt.Errorf("this token has %d WebSockets open here, the most it may", s.socketsByToken[token])
	case s.sockets >= s.limits.PerInstance:
		return "instance", fmt.Errorf("this server has %d WebSockets open, the most it takes", s.sockets)
	}
	s.sockets++
	s.socketsByToken[token]++
	var once sync.Once
	release := func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.sockets--
			uncount(s.socketsByToken, token)
		})
	}
	c.mu.Lock()
	c.socket = release
	c.mu.Unlock()
	return "", nil
}

// take counts a new subscription on c (nil: not on a connection) and
// returns what uncounts it, or the error that refuses it.
func (s *subscriptionCounter) take(c *connection) (release func(), err *gqlerror.Error) {
	release, err = s.count(c)
	if err != nil && s.onRefused != nil {
		s.onRefused(err.Extensions["limit"].(string))
	}
	return release, err
}

func (s *subscriptionCounter) count(c *connection) (release func(), err *gqlerror.Error) {
	var token string
	if c != nil {
		_, token = c.credentials()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case c != nil && c.websocket && c.subscriptions >= s.limits.PerSocket:
		return nil, tooMany("socket", s.limits.PerSocket,
			"this WebSocket has %d subscriptions open, the most one may have: complete one first, or open another WebSocket", c.subscriptions)
	case s.byToken[token] >= s.limits.PerToken:
		return nil, tooMany("token", s.limits.PerToken,
			"this token has %d subscriptions open on this server, the most one may have: complete one first", s.byToken[token])
	case s.total >= s.limits.PerInstance:
		return nil, tooMany("instance", s.limits.PerInstance,
			"this server has %d subscriptions open, the most it takes: retry later, or on another instance", s.total)
	}
	s.total++
	s.byToken[token]++
	if c != nil {
		c.subscriptions++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			uncount(s.byToken, token)
			if c != nil {
				c.subscriptions--
			}
		})
	}, nil
}

// uncount takes one off key's count in m, dropping keys that reach zero
// so the map holds only the tokens with something open.
func uncount(m map[string]int, key string) {
	if m[key]--; m[key] == 0 {
		delete(m, key)
	}
}

func tooMany(limit string, most int, format string, n int) *gqlerror.Error {
	return &gqlerror.Error{Message: fmt.Sprintf(format, n),
		Extensions: map[string]any{"code": codeTooManySubscriptions, "limit": limit, "max": most}}
}
