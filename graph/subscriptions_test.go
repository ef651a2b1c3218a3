package graph

import "testing"

// TestSubscriptionLimitDefaults: caps left unset (SUBSCRIPTIONS_PER_*)
// are the documented defaults, docs/operations/subscriptions.md's.
func TestSubscriptionLimitDefaults(t *testing.T) {
	t.Parallel()
	got := SubscriptionLimits{}.withDefaults()
	if want := (SubscriptionLimits{PerSocket: 100, PerToken: 200, PerInstance: 10_000}); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if got := (SubscriptionLimits{PerToken: 7}).withDefaults(); got.PerToken != 7 || got.PerSocket != 100 {
		t.Errorf("a cap set is kept, the others default: %+v", got)
	}
}
