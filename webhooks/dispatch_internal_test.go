package webhooks

import (
	"testing"
	"time"
)

// TestOutcome: a failed attempt is retried after the backoff counted from
// when it ended, and fails for good when that retry would fall past the
// delivery's deadline (the event's time plus MaxAge).
func TestOutcome(t *testing.T) {
	t.Parallel()
	s := &Service{cfg: Config{RetryMin: time.Second, MaxAge: 8 * time.Second}}
	event := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		r           result
		wantStatus  string
		wantNext    time.Time
		wantRetries int
	}{
		{"delivered", result{claim: claim{EventAt: event}, at: event, took: time.Second, ok: true},
			"DELIVERED", event, 0},
		{"quick failure: retried a second after it ended", result{claim: claim{EventAt: event}, at: event, took: 100 * time.Millisecond},
			"PENDING", event.Add(1100 * time.Millisecond), 1},
		{"second failure in a row: two seconds", result{claim: claim{EventAt: event, Retries: 1}, at: event.Add(2 * time.Second), took: time.Second},
			"PENDING", event.Add(5 * time.Second), 2},
		{"a 10 s timeout leaves no retry within the 8 s", result{claim: claim{EventAt: event}, at: event, took: 10 * time.Second},
			"FAILED", event, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.outcome(tc.r)
			if got.status != tc.wantStatus || !got.next.Equal(tc.wantNext) || got.retries != tc.wantRetries {
				t.Errorf("outcome = %s next %v retries %d; want %s next %v retries %d",
					got.status, got.next, got.retries, tc.wantStatus, tc.wantNext, tc.wantRetries)
			}
		})
	}
}
