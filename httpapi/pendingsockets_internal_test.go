package httpapi

import (
	"net/http"
	"testing"
	"time"
)

// TestPendingReleaseCountsOnce: a socket's slot is given back by
// connection_init and again when the socket ends; only the first counts.
func TestPendingReleaseCountsOnce(t *testing.T) {
	waiting, refused := 0, map[string]int{}
	hooks := pendingSocketHooks{waiting: func(d int) { waiting += d }, refused: func(l string) { refused[l]++ }}
	p := newPendingSockets(PendingSocketLimits{PerAddress: 2, PerInstance: 3}, 2500*time.Millisecond, hooks)
	if p.retryAfter != "3" {
		t.Errorf("Retry-After %q for a 2.5 s init timeout, want 3", p.retryAfter)
	}
	a1, _ := p.acquire("a")
	if _, refused := p.acquire("a"); refused != 0 {
		t.Fatalf("second socket from a refused with %d", refused)
	}
	if _, refused := p.acquire("a"); refused != http.StatusTooManyRequests {
		t.Fatalf("third socket from a: %d, want 429", refused)
	}
	a1()
	a1()
	if _, refused := p.acquire("a"); refused != 0 {
		t.Fatalf("after a release, a socket from a refused with %d", refused)
	}
	if _, refused := p.acquire("a"); refused != http.StatusTooManyRequests {
		t.Fatalf("a release counted twice: %d, want 429", refused)
	}
	b1, _ := p.acquire("b")
	if _, refused := p.acquire("c"); refused != http.StatusServiceUnavailable {
		t.Fatalf("past the instance's cap: %d, want 503", refused)
	}
	b1()
	b1()
	if p.total != 2 || p.byAddr["b"] != 0 || len(p.byAddr) != 1 {
		t.Errorf("after b's release: total %d, by address %v", p.total, p.byAddr)
	}
	if waiting != p.total || refused["address"] != 2 || refused["instance"] != 1 {
		t.Errorf("hooks: %d waiting, refused %v; want %d waiting, 2 by address, 1 by instance", waiting, refused, p.total)
	}
}
