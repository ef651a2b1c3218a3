package events

import (
	"testing"
	"time"
)

// TestReplayBudgetDefaults: a replay budget left unset
// (SUBSCRIPTION_REPLAY_RATE) is 2,000 events a second, 4 pages at once, a
// 10 s stall: docs/operations/subscriptions.md's figures.
func TestReplayBudgetDefaults(t *testing.T) {
	t.Parallel()
	b := newReplayBudget(0, 0, 0)
	if b.rate.Limit() != 2000 || cap(b.slots) != 4 || b.stall != 10*time.Second || b.rate.Burst() != window+1 {
		t.Errorf("defaults: %v events/s, %d pages, %s stall, burst %d", b.rate.Limit(), cap(b.slots), b.stall, b.rate.Burst())
	}
	if b := newReplayBudget(50, 2, time.Second); b.rate.Limit() != 50 || cap(b.slots) != 2 || b.stall != time.Second {
		t.Errorf("set: %v events/s, %d pages, %s stall", b.rate.Limit(), cap(b.slots), b.stall)
	}
}
