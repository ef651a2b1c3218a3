package events_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestReplaysShareSlotsAmongClients: one client's replays hold at most
// half of the instance's replay slots, so another client's replay starts
// while they wait, however many they are. The slots were taken in turn by
// everyone: against a running server, 150 replays of one token's client
// held another client's first event back 7.8 s (0.02 s alone), and
// replays whose readers stall held every slot until their stall time.
func TestReplaysShareSlotsAmongClients(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{ReplayPages: 2, ReplayStall: time.Minute})
		for i := range 3 {
			capture := false
			if _, err := e.svc.Create(t.Context(), payments.CreateRequest{ClientID: "busy", IdempotencyKey: fmt.Sprint("busy-", i),
				Amount: "1.00", Currency: "BRL", Method: payments.MethodPix, Capture: &capture, Origin: origin}); err != nil {
				t.Fatal(err)
			}
		}
		e.create(t, "other-1", "1.00", true)    // client-1's
		collect(t, e.ev, events.Filter{}, 3, 1) // all four numbered

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		zero := int64(0)
		// Replays of busy whose readers take nothing: each holds its slot
		// for the stall time, a minute.
		first := e.ev.Subscribe(ctx, events.Filter{ClientID: "busy"}, &zero)
		for deadline := time.Now().Add(5 * time.Second); e.ev.ReplaysInProgress() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d replays hold a page after 5 s, want busy's first", e.ev.ReplaysInProgress())
			}
		}
		for range 4 {
			e.ev.Subscribe(ctx, events.Filter{ClientID: "busy"}, &zero)
		}
		// They wait for busy's share (one slot of two), counted as waiting.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if reading, waiting := e.ev.Replays(); reading == 1 && waiting == 4 {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("replays after 5 s: %d reading, %d waiting; want busy's first reading, its four others waiting", reading, waiting)
			}
		}
		other := e.ev.Subscribe(ctx, events.Filter{ClientID: "client-1"}, &zero)
		select {
		case ev, ok := <-other.C:
			if !ok || ev.Payment.ClientID != "client-1" {
				t.Fatalf("another client's replay: %+v (open %v): %v", ev, ok, other.Err())
			}
		case <-ctx.Done():
			t.Fatal("another client's replay waited behind busy's stalled replays")
		}
		if n := e.ev.ReplaysInProgress(); n > 2 {
			t.Errorf("%d replays hold a page, more than the 2 slots", n)
		}
		cancel()
		for range first.C {
		}
	})
}
