package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the replay budget (Options.ReplayRate, ReplayPages,
// ReplayStall). 2,000 events a second is about a third of a core of this
// project's benchmark machine (docs/benchmarks/2026-12-04-subscription-limits.md),
// and replays an hour of 50 payments a second in 90 s.
const (
	DefaultReplayRate  = 2000
	DefaultReplayPages = 4
	DefaultReplayStall = 10 * time.Second
)

// replayBudget paces the instance's subscriptions as they read the outbox.
// Without it, each subscription with `after` reads and sends as fast as
// its client takes events: twenty of them from "0" kept the server busy
// for a minute and a half and createPayment waited seconds. With it they
// share a rate (a token bucket: golang.org/x/time/rate, whose waiters are
// served in turn) and a few slots, each slot holding at most one page of
// window ids, so the memory replays take is ReplayPages pages whatever
// their number. Each client's replays take turns within a share of the
// slots first (replayTurns), so that no client holds them all.
type replayBudget struct {
	rate  *rate.Limiter
	slots chan struct{}
	turns *replayTurns
	stall time.Duration
	// waiting counts the replays waiting for their client's share or a
	// slot (Service.Replays).
	waiting atomic.Int64
}

func newReplayBudget(perSecond, pages int, stall time.Duration) *replayBudget {
	if perSecond <= 0 {
		perSecond = DefaultReplayRate
	}
	if pages <= 0 {
		pages = DefaultReplayPages
	}
	if stall <= 0 {
		stall = DefaultReplayStall
	}
	// The burst is one page and its read: a page is paid for at once.
	return &replayBudget{rate: rate.NewLimiter(rate.Limit(perSecond), window+1), slots: make(chan struct{}, pages),
		turns: newReplayTurns(pages), stall: stall}
}

// acquire takes a slot for a replay of client's events, waiting for a
// place in the client's share and then for a slot; release gives both
// back. ok is false when ctx ended first.
func (b *replayBudget) acquire(ctx context.Context, client string) (release func(), ok bool) {
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	leave, ok := b.turns.enter(ctx, client)
	if !ok {
		return nil, false
	}
	select {
	case b.slots <- struct{}{}:
		return func() { <-b.slots; leave() }, true
	case <-ctx.Done():
		leave()
		return nil, false
	}
}

// pay waits until the budget covers a page of n events and its read;
// false when ctx ended first.
func (b *replayBudget) pay(ctx context.Context, n int) bool {
	return b.rate.WaitN(ctx, min(n, window)+1) == nil
}

// replayTurns keeps each client's replays to half of the instance's replay
// slots (at least one): the slots are taken in turn, so without it one
// client's replays (a token's 200 subscriptions from "0", or readers that
// stall while they hold a page) queued every other client's replay and
// catch-up behind all of theirs. Replays of no one client (an unbound
// token's, of every client) count as one client's.
type replayTurns struct {
	most int

	mu     sync.Mutex
	byName map[string]*clientTurns
}

// clientTurns is one client's share of the slots and how many of its
// replays hold or wait for one.
type clientTurns struct {
	slots chan struct{}
	users int
}

func newReplayTurns(slots int) *replayTurns {
	return &replayTurns{most: max(1, slots/2), byName: map[string]*clientTurns{}}
}

// enter waits for a place in client's share; leave gives it back. ok is
// false when ctx ended first.
func (t *replayTurns) enter(ctx context.Context, client string) (leave func(), ok bool) {
	t.mu.Lock()
	ct := t.byName[client]
	if ct == nil {
		ct = &clientTurns{slots: make(chan struct{}, t.most)}
		t.byName[client] = ct
	}
	ct.users++
	t.mu.Unlock()
	done := func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if ct.users--; ct.users == 0 {
			delete(t.byName, client) // the map holds the clients replaying now only
		}
	}
	select {
	case ct.slots <- struct{}{}:
		return func() { <-ct.slots; done() }, true
	case <-ctx.Done():
		done()
		return nil, false
	}
}
