package webhooks

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestDefaults: without RetryMin and MaxAge (WEBHOOK_RETRY_MIN and
// WEBHOOK_MAX_AGE unset) a failed delivery is first retried 5 s after its
// attempt, and retried until 72 hours after its event; without
// AttemptTimeout (WEBHOOK_ATTEMPT_TIMEOUT) an endpoint has the contract's
// 10 s to answer, and a claim lasts 15 s.
func TestDefaults(t *testing.T) {
	t.Parallel()
	s, err := New(dbtest.SQLite(t).Gorm, nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.AttemptTimeout != 10*time.Second || s.client.Timeout != 10*time.Second || leaseFor(s.cfg.AttemptTimeout) != 15*time.Second {
		t.Errorf("attempt timeout %s (client %s), lease %s; want 10s and 15s", s.cfg.AttemptTimeout, s.client.Timeout, leaseFor(s.cfg.AttemptTimeout))
	}
	event := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	failedAt := func(after time.Duration, retries int) outcome {
		return s.outcome(result{claim: claim{EventAt: event, Retries: retries}, at: event.Add(after)})
	}
	if got := failedAt(0, 0); got.status != "PENDING" || !got.next.Equal(event.Add(5*time.Second)) {
		t.Errorf("a first failure: %s, next at +%s; want a retry at +5s", got.status, got.next.Sub(event))
	}
	// Late retries wait MaxRetryInterval (an hour): one planned 71 hours
	// after the event is within the 72, one planned 72h30m is not.
	if got := failedAt(70*time.Hour, 30); got.status != "PENDING" {
		t.Errorf("a failure 70h after its event: %s, want a retry within 72h", got.status)
	}
	if got := failedAt(71*time.Hour+30*time.Minute, 30); got.status != "FAILED" {
		t.Errorf("a failure 71h30m after its event: %s, want FAILED (its retry would fall past 72h)", got.status)
	}
}
