package httpapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// streamQuery selects an event's payment with every list and the next
// action, as asOfQuery does, for events of any payment.
const streamQuery = `subscription($after: ID) {
  paymentEvents(after: $after) {
    type
    payment { status refundedAmount refundCount attemptCount processorCallCount processorCalls { operation } refunds { idempotencyKey status } attempts { operation outcome } nextAction { type } }
  }
}`

// threeEvents makes n card payments with three events each (authorized,
// captured, partly refunded) through the API, and waits until the events
// are numbered: 3n events.
func (b *eventsBundle) threeEvents(t *testing.T, prefix string, n int) {
	t.Helper()
	for i := range n {
		in := input("shop-stream", "10", "BRL", "CREDIT_CARD")
		in["capture"] = false
		id := b.create(t, fmt.Sprintf("%s-%d", prefix, i), in).Payment.ID
		b.mustGQL(t, `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, amount: "8", idempotencyKey: $key) { replayed } }`,
			map[string]any{"id": id, "key": fmt.Sprintf("%s-%d-cap", prefix, i)})
		b.mustGQL(t, refundMutation, map[string]any{"id": id, "key": fmt.Sprintf("%s-%d-r", prefix, i), "amount": "3"})
	}
	waitNumbered(t, b.ev, int64(3*n))
}

// waitNumbered waits until the hub has seen event id last.
func waitNumbered(t testing.TB, ev *events.Service, last int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ev.Last() < last {
		if time.Now().After(deadline) {
			t.Fatalf("events numbered up to %d, want %d", ev.Last(), last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// threeEventsWant is what streamQuery's events of threeEvents show, in
// asOfEvent's words, for each payment in turn.
var threeEventsWant = []string{
	"PAYMENT_CREATED AUTHORIZED 0.00 refunds 0 [] attempts 1 [CREATE_PAYMENT:CREATED] calls 1 [CREATE_PAYMENT]",
	"PAYMENT_CAPTURED CAPTURED 0.00 refunds 0 [] attempts 2 [CREATE_PAYMENT:CREATED CAPTURE_PAYMENT:APPLIED] calls 2 [CREATE_PAYMENT CAPTURE_PAYMENT]",
	"PAYMENT_REFUNDED PARTIALLY_REFUNDED 3.00 refunds 1 [%s:SUCCEEDED] attempts 3 [CREATE_PAYMENT:CREATED CAPTURE_PAYMENT:APPLIED REFUND_PAYMENT:APPLIED] calls 3 [CREATE_PAYMENT CAPTURE_PAYMENT REFUND_PAYMENT]",
}

// TestReplayReadsListsOncePerPage: a subscription replayed from `after`
// gets its events as of each event, and reads their refunds, attempts and
// processor calls once per page of replayed events, not once per event
// (three reads each, as it did when each event resolved its lists alone):
// over SSE, and over one WebSocket with two subscriptions at once, each
// with its own reads.
func TestReplayReadsListsOncePerPage(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db, reads := countedDB(t, dialect)
			b := setupEvents(t, db)
			const payments = 12
			b.threeEvents(t, "replay", payments)
			vars := map[string]any{"after": "0"}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()

			reads.take()
			stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, streamQuery, vars)
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			replayed := make([]string, 0, 3*payments)
			for i := range 3 * payments {
				event, data, err := stream.Next()
				if err != nil || event != "next" {
					t.Fatalf("event %d: %s %s %v", i, event, data, err)
				}
				replayed = append(replayed, asOfEvent(t, data))
			}
			checkThreeEvents(t, "SSE", "replay", replayed)
			// One page (36 events, under the hub's buffer): one read per
			// list, none for the next action (an event carries its own).
			checkListReads(t, "SSE", reads.take(), 1)

			ws, err := streamtest.DialWS(ctx, b.srv.URL, "Bearer "+token)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			for _, id := range []string{"a", "b"} {
				if err := ws.Subscribe(ctx, id, streamQuery, vars); err != nil {
					t.Fatal(err)
				}
			}
			byID := map[string][]string{}
			for i := range 2 * 3 * payments {
				m, err := ws.Next(ctx)
				if err != nil || m.Type != "next" {
					t.Fatalf("message %d: %+v %v", i, m, err)
				}
				byID[m.ID] = append(byID[m.ID], asOfEvent(t, m.Payload))
			}
			checkThreeEvents(t, "WebSocket a", "replay", byID["a"])
			checkThreeEvents(t, "WebSocket b", "replay", byID["b"])
			checkListReads(t, "two WebSocket subscriptions", reads.take(), 2)
		})
	}
}

// checkThreeEvents checks the events of threeEvents' payments made with
// prefix, as asOfEvent describes them.
func checkThreeEvents(t *testing.T, stream, prefix string, got []string) {
	t.Helper()
	if len(got)%3 != 0 || len(got) == 0 {
		t.Fatalf("%s: %d events", stream, len(got))
	}
	for i, g := range got {
		want := threeEventsWant[i%3]
		if i%3 == 2 {
			want = fmt.Sprintf(want, fmt.Sprintf("%s-%d-r", prefix, i/3))
		}
		if g != want {
			t.Errorf("%s, event %d:\n got %s\nwant %s", stream, i, g, want)
		}
	}
}

// checkListReads checks that a replay read each list want times, and
// next actions never.
func checkListReads(t *testing.T, stream string, got map[string]int, want int) {
	t.Helper()
	for _, kind := range []string{"attempts", "refunds", "processorCalls"} {
		if got[kind] != want {
			t.Errorf("%s: the replay read %s %d times, want %d: %v", stream, kind, got[kind], want, got)
		}
	}
	if got["async"] != 0 {
		t.Errorf("%s: the replay read next actions %d times, want none: %v", stream, got["async"], got)
	}
}

// TestLiveEventsShowTheirOwnLists: a subscription open while a payment
// changes gets each event's lists as of that event, read for it: the
// stream keeps no cache from one event to the next.
func TestLiveEventsShowTheirOwnLists(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, streamQuery, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		// The subscription is live once an event created after it opened
		// arrives; events of one payment follow in order.
		b.threeEvents(t, "live", 2)
		var got []string
		for i := range 6 {
			event, data, err := stream.Next()
			if err != nil || event != "next" {
				t.Fatalf("event %d: %s %s %v", i, event, data, err)
			}
			got = append(got, asOfEvent(t, data))
		}
		checkThreeEvents(t, "SSE", "live", got)
	})
}
