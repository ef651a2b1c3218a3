package events_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestLiveEventsSayWhatWaitsBehindThem: live events that wait in a
// subscription's buffer while its reader is busy go out saying how many
// follow at once (Following), as a replay's page does, so that a reader
// can resolve a burst together.
func TestLiveEventsSayWhatWaitsBehindThem(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		sub := e.ev.Subscribe(t.Context(), events.Filter{}, nil)
		e.waitLive(t, 1)

		// The first event is taken by the subscription, which then waits
		// for this reader; the next four wait in its buffer.
		const burst = 5
		for i := range burst {
			e.create(t, fmt.Sprintf("k-burst-%d", i), "1.00", true)
		}
		for deadline := time.Now().Add(10 * time.Second); e.ev.Waiting() != burst-1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d events waiting after 10 s, want %d", e.ev.Waiting(), burst-1)
			}
		}
		var got []int
		for range burst {
			ev, ok := <-sub.C
			if !ok {
				t.Fatalf("subscription ended: %v", sub.Err())
			}
			got = append(got, ev.Following)
		}
		// The first counted what was there when it was taken: anything.
		if want := []int{3, 2, 1, 0}; !slices.Equal(got[1:], want) {
			t.Errorf("Following of the events after the first: %v, want %v", got[1:], want)
		}
	})
}
