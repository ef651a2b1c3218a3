package httpapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cmpay/cmpay/apierror"
)

// A WebSocket upgrade without an Authorization header is accepted before
// anyone knows who sent it (its token comes in connection_init), so each
// such socket holds a file descriptor and some 38 KB until connection_init
// or the init timeout. These caps bound how many may wait so: without
// them one address opened 19,962 at once and the process ran out of file
// descriptors, /healthz included.
const (
	// DefaultPendingSocketsPerAddress: a browser opens one socket per tab
	// and sends connection_init within milliseconds; 32 leaves room for a
	// NAT's many users while one address cannot take the instance's share.
	DefaultPendingSocketsPerAddress = 32
	// DefaultPendingSocketsPerInstance: well below the usual file limit
	// (4096 on the reviewer's server), so a flood from many addresses
	// still leaves descriptors for requests, /healthz and the database.
	DefaultPendingSocketsPerInstance = 1024
)

// PendingSocketLimits caps the WebSockets that have not sent
// connection_init yet; zero fields mean the defaults above.
type PendingSocketLimits struct {
	PerAddress, PerInstance int
}

// pendingSocketHooks tell the metrics how many sockets wait (waiting: +1
// or -1) and which cap refused an upgrade (refused: "address" or
// "instance"); nil hooks do nothing.
type pendingSocketHooks struct {
	waiting func(delta int)
	refused func(limit string)
}

// pendingSockets counts the WebSockets waiting for their connection_init,
// per client address and in all.
type pendingSockets struct {
	perAddress, perInstance int
	retryAfter              string
	hooks                   pendingSocketHooks

	mu     sync.Mutex
	total  int
	byAddr map[string]int
}

func newPendingSockets(l PendingSocketLimits, initTimeout time.Duration, hooks pendingSocketHooks) *pendingSockets {
	if l.PerAddress <= 0 {
		l.PerAddress = DefaultPendingSocketsPerAddress
	}
	if l.PerInstance <= 0 {
		l.PerInstance = DefaultPendingSocketsPerInstance
	}
	// Every pending socket leaves within the init timeout: by then a slot
	// is free.
	secs := int(math.Ceil(initTimeout.Seconds()))
	return &pendingSockets{perAddress: l.PerAddress, perInstance: l.PerInstance,
		retryAfter: strconv.Itoa(max(secs, 1)), byAddr: map[string]int{}, hooks: hooks}
}

// acquire takes a slot for a socket from addr. It returns the function
// that gives it back (safe to call more than once: only the first call
// counts), or the status of the refusal: 429 when addr holds its share,
// 503 when the instance is full.
func (p *pendingSockets) acquire(addr string) (release func(), refused int) {
	refused = p.take(addr)
	switch refused {
	case 0:
		p.hooks.count(1)
	case http.StatusTooManyRequests:
		p.hooks.refuse("address")
		return nil, refused
	default:
		p.hooks.refuse("instance")
		return nil, refused
	}
	var once sync.Once
	return func() { once.Do(func() { p.release(addr) }) }, 0
}

// take counts a socket from addr in, or says which cap is full.
func (p *pendingSockets) take(addr string) (refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byAddr[addr] >= p.perAddress {
		return http.StatusTooManyRequests
	}
	if p.total >= p.perInstance {
		return http.StatusServiceUnavailable
	}
	p.byAddr[addr]++
	p.total++
	return 0
}

func (p *pendingSockets) release(addr string) {
	p.mu.Lock()
	p.total--
	if p.byAddr[addr]--; p.byAddr[addr] <= 0 {
		delete(p.byAddr, addr)
	}
	p.mu.Unlock()
	p.hooks.count(-1)
}

func (h pendingSocketHooks) count(delta int) {
	if h.waiting != nil {
		h.waiting(delta)
	}
}

func (h pendingSocketHooks) refuse(limit string) {
	if h.refused != nil {
		h.refused(limit)
	}
}

// refuse answers an upgrade past a cap, before it becomes a socket.
func (p *pendingSockets) refuse(w http.ResponseWriter, r *http.Request, status int) {
	e := apierror.Error{Code: apierror.RateLimited, Status: status,
		Message: "too many WebSockets from this address are waiting for connection_init; send it, or wait and try again"}
	if status == http.StatusServiceUnavailable {
		e.Code, e.Message = apierror.Unavailable, "too many WebSockets are waiting for connection_init on this instance; wait and try again"
	}
	w.Header().Set("Retry-After", p.retryAfter)
	writeProblem(w, r, e)
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
