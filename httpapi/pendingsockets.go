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

// pendingSockets counts the WebSockets waiting for their connection_init,
// per client address and in all.
type pendingSockets struct {
	perAddress, perInstance int
	retryAfter              string

	mu     sync.Mutex
	total  int
	byAddr map[string]int
}

func newPendingSockets(l PendingSocketLimits, initTimeout time.Duration) *pendingSockets {
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
		retryAfter: strconv.Itoa(max(secs, 1)), byAddr: map[string]int{}}
}

// acquire takes a slot for a socket from addr. It returns the function
// that gives it back (safe to call more than once: only the first call
// counts), or the status of the refusal: 429 when addr holds its share,
// 503 when the instance is full.
func (p *pendingSockets) acquire(addr string) (release func(), refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byAddr[addr] >= p.perAddress {
		return nil, http.StatusTooManyRequests
	}
	if p.total >= p.perInstance {
		return nil, http.StatusServiceUnavailable
	}
	p.byAddr[addr]++
	p.total++
	var once sync.Once
	return func() { once.Do(func() { p.release(addr) }) }, 0
}

func (p *pendingSockets) release(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total--
	if p.byAddr[addr]--; p.byAddr[addr] <= 0 {
		delete(p.byAddr, addr)
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
