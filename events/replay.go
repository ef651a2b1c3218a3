package events

import (
	"context"
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
// their number.
type replayBudget struct {
	rate  *rate.Limiter
	slots chan struct{}
	stall time.Duration
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
	return &replayBudget{rate: rate.NewLimiter(rate.Limit(perSecond), window+1), slots: make(chan struct{}, pages), stall: stall}
}

// acquire takes a slot, waiting for one; false when ctx ended first.
func (b *replayBudget) acquire(ctx context.Context) bool {
	select {
	case b.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *replayBudget) release() { <-b.slots }

// pay waits until the budget covers a page of n events and its read;
// false when ctx ended first.
func (b *replayBudget) pay(ctx context.Context, n int) bool {
	return b.rate.WaitN(ctx, min(n, window)+1) == nil
}
