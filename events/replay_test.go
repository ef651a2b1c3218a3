package events_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestReplaysHoldBoundedPages: replays from `after` share the instance's
// replay slots, so that however many there are, they hold that many pages
// of the outbox at most. With one slot, a replay whose reader does not
// take its page holds up the next one only until its stall time runs out:
// it then ends with ErrTooSlow, and the other replay gets every event.
func TestReplaysHoldBoundedPages(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{ReplayPages: 1, ReplayStall: 200 * time.Millisecond})
		for i := range 5 {
			e.create(t, fmt.Sprintf("replay-%d", i), "1.00", true)
		}
		collect(t, e.ev, events.Filter{}, 4, 1) // all five numbered

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		zero := int64(0)
		stalled := e.ev.Subscribe(ctx, events.Filter{}, &zero) // never read until the end
		// The stalled replay takes the one slot first.
		for deadline := time.Now().Add(5 * time.Second); e.ev.ReplaysInProgress() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d replays hold a page after 5 s, want the stalled one", e.ev.ReplaysInProgress())
			}
		}
		reader := e.ev.Subscribe(ctx, events.Filter{}, &zero)
		for i := range 5 {
			select {
			case ev, ok := <-reader.C:
				if !ok || ev.ID != int64(i+1) {
					t.Fatalf("event %d: id %d (open %v): %v", i, ev.ID, ok, reader.Err())
				}
				if i == 0 && !errors.Is(stalled.Err(), events.ErrTooSlow) {
					t.Errorf("the second replay got its first event while the stalled one held the slot (%v)", stalled.Err())
				}
			case <-ctx.Done():
				t.Fatalf("got %d of 5 events: the stalled replay never gave up its slot", i)
			}
		}
		for range stalled.C {
		}
		if !errors.Is(stalled.Err(), events.ErrTooSlow) {
			t.Errorf("stalled replay ended with %v, want ErrTooSlow", stalled.Err())
		}
	})
}

// TestAfterBeyondTheNewestEvent: an `after` no event has reached yet is
// bad input; the newest event's id, and any before it, are fine.
func TestAfterBeyondTheNewestEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		for i := range 2 {
			e.create(t, fmt.Sprintf("beyond-%d", i), "1.00", true)
		}
		collect(t, e.ev, events.Filter{}, 1, 1)
		for _, after := range []int64{0, 1, 2} {
			if err := e.ev.CheckAfter(t.Context(), after); err != nil {
				t.Errorf("after %d: %v", after, err)
			}
		}
		var invalid *payments.InvalidInputError
		for _, after := range []int64{3, 1 << 62} {
			err := e.ev.CheckAfter(t.Context(), after)
			if !errors.As(err, &invalid) || invalid.Problems[0].Field != "after" {
				t.Errorf("after %d: %v, want bad input in after", after, err)
			}
		}
	})
}

// TestParseIDDoesNotRepeatInput: the error for a malformed `after` says
// what after takes, and never repeats the value (error messages do not
// echo the request), short or long.
func TestParseIDDoesNotRepeatInput(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 50_000)
	for _, in := range []string{"garbage", "yesterday", long, "-" + long} {
		_, err := events.ParseID(in)
		var invalid *payments.InvalidInputError
		if !errors.As(err, &invalid) {
			t.Fatalf("ParseID(%.20s…): %v, want bad input", in, err)
		}
		msg := invalid.Problems[0].Message
		if strings.Contains(err.Error(), in) || strings.Contains(err.Error(), "999") || !strings.Contains(msg, "id of an event") {
			t.Errorf("ParseID(%.20s…): %.200q, want what after takes without the value", in, err.Error())
		}
	}
}
