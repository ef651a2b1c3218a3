package httpapi

import (
	"bufio"
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/cmpay/cmpay/auth"
)

// A WebSocket upgrade without an Authorization header is accepted before
// anyone knows who sent it (its token comes in connection_init), so each
// such socket holds a file descriptor and some 38 KB until connection_init
// or the init timeout. These caps bound how many may wait so: without
// them one address opened 19,962 at once and the process ran out of file
// descriptors, /healthz included.
//
// Past a cap the oldest waiting socket is dropped to make room, rather
// than the new one refused: a browser sends connection_init within
// milliseconds of opening, so a flood must open a cap's worth of sockets
// in those milliseconds to drop it, while refusing let a few upgrades a
// second lock out everyone behind the flooder's address (a NAT).
const (
	// DefaultPendingSocketsPerAddress: a browser opens one socket per tab
	// and sends connection_init within milliseconds; 32 leaves room for a
	// NAT's many users while one address cannot take the instance's share.
	DefaultPendingSocketsPerAddress = 32
	// DefaultPendingSocketsPerInstance: well below a common open-file
	// limit of 4096 (Go raises the soft limit to the hard one at start),
	// so a flood from many addresses still leaves descriptors for
	// requests, /healthz and the database.
	DefaultPendingSocketsPerInstance = 1024
)

// PendingSocketLimits caps the WebSockets that have not sent
// connection_init yet; zero fields mean the defaults above.
type PendingSocketLimits struct {
	PerAddress, PerInstance int
}

// pendingSocketHooks tell the metrics how many sockets wait (waiting: +1
// or -1) and which cap dropped a waiting socket (dropped: "address" or
// "instance"); nil hooks do nothing.
type pendingSocketHooks struct {
	waiting func(delta int)
	dropped func(limit string)
}

// pendingSockets holds the WebSockets waiting for their connection_init,
// oldest first, per client address and in all.
type pendingSockets struct {
	perAddress, perInstance int
	hooks                   pendingSocketHooks

	mu     sync.Mutex
	all    *list.List // of *pendingSocket, oldest first
	byAddr map[string]*list.List
}

// pendingSocket is one waiting socket: its place in both lists while it
// waits, and its connection once the upgrade has taken it over.
type pendingSocket struct {
	addr        string
	inAll, inAd *list.Element

	mu      sync.Mutex
	conn    net.Conn
	dropped bool
}

func newPendingSockets(l PendingSocketLimits, hooks pendingSocketHooks) *pendingSockets {
	if l.PerAddress <= 0 {
		l.PerAddress = DefaultPendingSocketsPerAddress
	}
	if l.PerInstance <= 0 {
		l.PerInstance = DefaultPendingSocketsPerInstance
	}
	return &pendingSockets{perAddress: l.PerAddress, perInstance: l.PerInstance, hooks: hooks,
		all: list.New(), byAddr: map[string]*list.List{}}
}

// admit counts a socket from addr in, dropping the address's oldest
// waiting socket when the address holds its share, else the instance's
// oldest when the instance is full. It returns the socket and the
// function that gives its place back (safe to call more than once: only
// the first call counts, as leave finds s out of the lists after it). An
// IPv6 address counts as its /64 (auth.AddressKey).
func (p *pendingSockets) admit(addr string) (*pendingSocket, func()) {
	s := &pendingSocket{addr: auth.AddressKey(addr)}
	victim, limit := p.take(s)
	p.hooks.count(1)
	if victim != nil {
		p.hooks.drop(limit)
		p.hooks.count(-1)
		victim.drop()
	}
	return s, func() {
		if p.leave(s) { // false once s is out: released or dropped
			p.hooks.count(-1)
		}
	}
}

// take puts s in the lists, taking out the socket whose place it takes,
// if any, and the cap that chose it.
func (p *pendingSockets) take(s *pendingSocket) (victim *pendingSocket, limit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ad := p.byAddr[s.addr]
	switch {
	case ad != nil && ad.Len() >= p.perAddress:
		victim, limit = ad.Front().Value.(*pendingSocket), "address"
	case p.all.Len() >= p.perInstance:
		victim, limit = p.all.Front().Value.(*pendingSocket), "instance"
	}
	if victim != nil {
		p.remove(victim)
	}
	if ad = p.byAddr[s.addr]; ad == nil {
		ad = list.New()
		p.byAddr[s.addr] = ad
	}
	s.inAll, s.inAd = p.all.PushBack(s), ad.PushBack(s)
	return victim, limit
}

// leave takes s out of the lists; false if it was out already (dropped).
func (p *pendingSockets) leave(s *pendingSocket) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.inAll == nil {
		return false
	}
	p.remove(s)
	return true
}

// remove takes s out of the lists; p.mu is held.
func (p *pendingSockets) remove(s *pendingSocket) {
	p.all.Remove(s.inAll)
	ad := p.byAddr[s.addr]
	ad.Remove(s.inAd)
	if ad.Len() == 0 {
		delete(p.byAddr, s.addr)
	}
	s.inAll, s.inAd = nil, nil
}

// drop closes s's connection, or has it closed as soon as the upgrade
// takes it over. Closing the connection ends the socket's handler, with
// no close frame: a socket that has said nothing is owed none.
func (s *pendingSocket) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = true
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

// hijacked records the connection the upgrade took over.
func (s *pendingSocket) hijacked(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = conn
	if s.dropped {
		_ = conn.Close()
	}
}

// watchHijack is w, but the connection its Hijack hands over is recorded
// in s, so that s can be dropped.
type watchHijack struct {
	http.ResponseWriter
	s *pendingSocket
}

func (w watchHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.s.hijacked(conn)
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the writer's other methods
// (deadlines, Flush).
func (w watchHijack) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h pendingSocketHooks) count(delta int) {
	if h.waiting != nil {
		h.waiting(delta)
	}
}

func (h pendingSocketHooks) drop(limit string) {
	if h.dropped != nil {
		h.dropped(limit)
	}
}

// pendingReleaseKey carries a pending socket's release function, called
// when connection_init arrives (websocketAuthenticator).
type pendingReleaseKey struct{}

// releasePending gives back the slot of the socket whose context ctx is,
// if it holds one.
func releasePending(ctx context.Context) {
	if release, ok := ctx.Value(pendingReleaseKey{}).(func()); ok {
		release()
	}
}
