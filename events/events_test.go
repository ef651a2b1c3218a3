package events_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// env is a payments service and an events service over one database, the
// events service running until the test ends.
type env struct {
	db  dbtest.DB
	svc *payments.Service
	ev  *events.Service
}

func newEnv(t *testing.T, db dbtest.DB, opts events.Options) *env {
	t.Helper()
	if opts.Poll == 0 {
		opts.Poll = 100 * time.Millisecond
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	ev, err := events.New(db.Gorm, opts)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ev)
	return &env{db: db, svc: svc, ev: ev}
}

// waitLive waits until n subscriptions have their place on the hub: a
// subscription made without a cursor gets only the events after that.
func (e *env) waitLive(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); e.ev.Subscribers() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions live after 10 s, want %d", e.ev.Subscribers(), n)
		}
	}
}

// run runs ev until the test ends.
func run(t *testing.T, ev *events.Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func ptr[T any](v T) *T { return &v }

var origin = payments.Origin{Transport: "test"}

func (e *env) create(t *testing.T, key, amount string, capture bool) payments.Payment {
	t.Helper()
	res, err := e.svc.Create(t.Context(), payments.CreateRequest{ClientID: "client-1", IdempotencyKey: key, Amount: amount,
		Currency: "BRL", Method: payments.MethodPix, Capture: &capture, Origin: origin})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return res.Payment
}

// collect reads n events from a subscription after `after`, failing after
// a few seconds.
func collect(t *testing.T, ev *events.Service, f events.Filter, after int64, n int) []events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sub := ev.Subscribe(ctx, f, &after)
	var out []events.Event
	for len(out) < n {
		e, ok := <-sub.C
		if !ok {
			t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, sub.Err())
		}
		out = append(out, e)
	}
	return out
}

// TestOutbox: creating, capturing, canceling and refunding each emit
// exactly one event, with the key of the request and the payment as the
// change left it; replays, rejections and refusals emit none.
func TestOutbox(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		ctx := t.Context()

		p1 := e.create(t, "k-create-1", "10.00", true)
		p2 := e.create(t, "k-create-2", "20.00", false)
		p3 := e.create(t, "k-create-3", "30.00", false)
		if _, err := e.svc.Capture(ctx, payments.CaptureRequest{PaymentID: p2.ID, Amount: ptr("15"), IdempotencyKey: "k-capture", Origin: origin}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Cancel(ctx, payments.CancelRequest{PaymentID: p3.ID, IdempotencyKey: "k-cancel", Origin: origin}); err != nil {
			t.Fatal(err)
		}
		r1, err := e.svc.Refund(ctx, payments.RefundRequest{PaymentID: p1.ID, Amount: ptr("4"), Reason: ptr("broken"), IdempotencyKey: "k-refund-1", Origin: origin})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := e.svc.Refund(ctx, payments.RefundRequest{PaymentID: p1.ID, IdempotencyKey: "k-refund-2", Origin: origin})
		if err != nil {
			t.Fatal(err)
		}

		noEvents(t, e, p1, p2)

		// A payment made after all of them: had any of the above written an
		// event, the marker's would not be the eighth.
		marker := e.create(t, "k-marker", "1.00", true)
		got := collect(t, e.ev, events.Filter{}, 0, 8)
		if got[7].Payment.ID != marker.ID || got[7].Type != payments.EventCreated {
			t.Fatalf("event 8 is %s of %s, want the marker's creation", got[7].Type, got[7].Payment.ID)
		}
		type want struct {
			typ                        payments.EventType
			key, payment               string
			status                     payments.Status
			amount, captured, refunded string
			refund                     string
		}
		wants := []want{
			{payments.EventCreated, "k-create-1", p1.ID, payments.StatusCaptured, "10.00", "10.00", "0.00", ""},
			{payments.EventCreated, "k-create-2", p2.ID, payments.StatusAuthorized, "20.00", "0.00", "0.00", ""},
			{payments.EventCreated, "k-create-3", p3.ID, payments.StatusAuthorized, "30.00", "0.00", "0.00", ""},
			{payments.EventCaptured, "k-capture", p2.ID, payments.StatusCaptured, "20.00", "15.00", "0.00", ""},
			{payments.EventCanceled, "k-cancel", p3.ID, payments.StatusCanceled, "30.00", "0.00", "0.00", ""},
			{payments.EventRefunded, "k-refund-1", p1.ID, payments.StatusPartiallyRefunded, "10.00", "10.00", "4.00", r1.Refund.ID},
			{payments.EventRefunded, "k-refund-2", p1.ID, payments.StatusRefunded, "10.00", "10.00", "10.00", r2.Refund.ID},
		}
		for i, w := range wants {
			g := got[i]
			refund := ""
			if g.Refund != nil {
				refund = g.Refund.ID
			}
			if g.ID != int64(i+1) || g.Type != w.typ || g.IdempotencyKey != w.key || g.Payment.ID != w.payment ||
				g.Payment.Status != w.status || g.Payment.Amount.String() != w.amount || g.Payment.Captured.String() != w.captured ||
				g.Payment.Refunded.String() != w.refunded || refund != w.refund {
				t.Errorf("event %d = #%d %s key %s payment %s %s %s/%s/%s refund %q;\nwant #%d %+v",
					i, g.ID, g.Type, g.IdempotencyKey, g.Payment.ID, g.Payment.Status, g.Payment.Amount, g.Payment.Captured,
					g.Payment.Refunded, refund, i+1, w)
			}
		}
		// A created event holds the payment exactly as its create returned it,
		// as of its time.
		for i, p := range []payments.Payment{p1, p2, p3} {
			if p.AsOf = got[i].At; got[i].Payment != p || p.AsOf.IsZero() {
				t.Errorf("event %d's payment = %+v,\nthe create returned %+v", i, got[i].Payment, p)
			}
		}
		if r := got[5].Refund; r == nil || r.Amount.String() != "4.00" || r.Reason == nil || *r.Reason != "broken" || r.IdempotencyKey != "k-refund-1" {
			t.Errorf("refund of event 6: %+v", r)
		}
		if got[3].Payment.CapturedAt.IsZero() || !got[4].Payment.CanceledAt.Equal(got[4].At) || !got[0].At.Equal(p1.CreatedAt) {
			t.Errorf("event times: captured at %v, canceled at %v (event at %v), created at %v (payment %v)",
				got[3].Payment.CapturedAt, got[4].Payment.CanceledAt, got[4].At, got[0].At, p1.CreatedAt)
		}

		// Nothing else was written, numbered or not.
		all, err := e.ev.Since(ctx, 0, events.Filter{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var rows int64
		db.Gorm.Table("payment_events").Count(&rows)
		if len(all) != 8 || rows != 8 {
			t.Errorf("%d events numbered, %d rows; want 8", len(all), rows)
		}
		checkFilters(t, e, p1.ID)
	})
}

// noEvents makes a replay of each kind, a rejection and three refusals,
// none of which may write an event (TestOutbox counts them).
func noEvents(t *testing.T, e *env, p1, p2 payments.Payment) {
	t.Helper()
	ctx := t.Context()
	e.create(t, "k-create-1", "10.00", true)
	if _, err := e.svc.Capture(ctx, payments.CaptureRequest{PaymentID: p2.ID, Amount: ptr("15"), IdempotencyKey: "k-capture", Origin: origin}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Refund(ctx, payments.RefundRequest{PaymentID: p1.ID, IdempotencyKey: "k-refund-2", Origin: origin}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Create(ctx, payments.CreateRequest{ClientID: "client-1", IdempotencyKey: "k-create-1", Amount: "11",
		Currency: "BRL", Method: payments.MethodPix, Origin: origin}); !errors.Is(err, payments.ErrKeyReused) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := e.svc.Cancel(ctx, payments.CancelRequest{PaymentID: p1.ID, IdempotencyKey: "k-refused-cancel", Origin: origin}); !errors.Is(err, payments.ErrStateConflict) {
		t.Fatalf("cancel of a refunded payment: %v", err)
	}
	if _, err := e.svc.Refund(ctx, payments.RefundRequest{PaymentID: p2.ID, Amount: ptr("100"), IdempotencyKey: "k-refused-refund", Origin: origin}); !errors.Is(err, payments.ErrAmountExceeds) {
		t.Fatalf("refund above the captured amount: %v", err)
	}
	if _, err := e.svc.Capture(ctx, payments.CaptureRequest{PaymentID: "pay_nope", IdempotencyKey: "k-not-found", Origin: origin}); !errors.Is(err, payments.ErrNotFound) {
		t.Fatalf("capture of an unknown payment: %v", err)
	}
}

// checkFilters reads the events of one payment and of a client with none,
// and by ids no event can have.
func checkFilters(t *testing.T, e *env, paymentID string) {
	t.Helper()
	ctx := t.Context()
	if byPayment, _ := e.ev.Since(ctx, 0, events.Filter{PaymentID: paymentID}, 100); len(byPayment) != 3 {
		t.Errorf("%d events of payment 1, want 3", len(byPayment))
	}
	if other, _ := e.ev.Since(ctx, 0, events.Filter{ClientID: "client-2"}, 100); len(other) != 0 {
		t.Errorf("%d events of client-2, want 0", len(other))
	}
	// An id no event can have (PostgreSQL refuses a NUL byte or bytes
	// that are not UTF-8 with an error): nothing, on both databases.
	for _, f := range []events.Filter{{PaymentID: paymentID + "\x00"}, {ClientID: "client-1\xff"}} {
		if none, err := e.ev.Since(ctx, 0, f, 100); err != nil || len(none) != 0 {
			t.Errorf("Since(%q) = %d events, %v; want none", f, len(none), err)
		}
	}
}

// TestAfterResumesWithoutGaps: subscriptions that start, drop and resume
// at every point of a stream being written see every event exactly once,
// in id order, ids without gaps.
func TestAfterResumesWithoutGaps(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		const n = 120
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range n / 4 {
					e.create(t, fmt.Sprintf("resume-%d-%d", w, i), "1.00", true)
				}
			})
		}
		// A reader that hangs up every few events and resumes after the
		// last id it got.
		var got []int64
		after := int64(0)
		for len(got) < n {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			sub := e.ev.Subscribe(ctx, events.Filter{}, &after)
			for range 7 {
				ev, ok := <-sub.C
				if !ok {
					t.Fatalf("subscription ended: %v", sub.Err())
				}
				got = append(got, ev.ID)
				after = ev.ID
				if len(got) == n {
					break
				}
			}
			cancel()
		}
		wg.Wait()
		for i, id := range got {
			if id != int64(i+1) {
				t.Fatalf("event %d has id %d; ids: %v", i, id, got)
			}
		}
	})
}

// TestSlowSubscriberIsDropped: a subscriber that does not read holds up no
// one; once it reads again, more than MaxLag events behind, it is dropped
// with ErrTooSlow.
func TestSlowSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t), events.Options{Buffer: 16, MaxLag: 20})
	slow := e.ev.Subscribe(t.Context(), events.Filter{}, nil)
	zero := int64(0)
	fast := e.ev.Subscribe(t.Context(), events.Filter{}, &zero)
	e.waitLive(t, 2)
	fastDone := make(chan error, 1)
	var fastGot atomic.Int64
	go func() {
		for i := range 60 {
			select {
			case ev, ok := <-fast.C:
				if !ok || ev.ID != int64(i+1) {
					fastDone <- fmt.Errorf("fast subscriber got %d (open %v), want %d: %v", ev.ID, ok, i+1, fast.Err())
					return
				}
				fastGot.Add(1)
			case <-time.After(10 * time.Second):
				fastDone <- fmt.Errorf("fast subscriber got %d events", i)
				return
			}
		}
		fastDone <- nil
	}()
	for i := range 60 {
		// The fast subscriber reads as the events come; without -race the
		// creates could outrun it past MaxLag too, which is not what this
		// test is about. The slow one is never waited for.
		for deadline := time.Now().Add(10 * time.Second); fastGot.Load() < int64(i)-10 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		e.create(t, fmt.Sprintf("slow-%d", i), "1.00", true)
	}
	if err := <-fastDone; err != nil {
		t.Fatal(err)
	}
	n := 0
	for range slow.C {
		n++
	}
	if !errors.Is(slow.Err(), events.ErrTooSlow) || n > 17 { // the buffer, and the one in hand
		t.Errorf("slow subscriber: %d events, then %v; want at most 17, then ErrTooSlow", n, slow.Err())
	}
}

// TestBurstDoesNotDropAReader: a burst of events larger than a subscriber's
// buffer takes it off the live list for a moment; it catches up from the
// outbox and gets every event once, in order.
func TestBurstDoesNotDropAReader(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{Buffer: 4})
		sub := e.ev.Subscribe(t.Context(), events.Filter{}, nil)
		e.waitLive(t, 1)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 25 {
					e.create(t, fmt.Sprintf("burst-%d-%d", w, i), "1.00", true)
				}
			})
		}
		for i := range 200 {
			select {
			case ev, ok := <-sub.C:
				if !ok || ev.ID != int64(i+1) {
					t.Fatalf("event %d: id %d (open %v): %v", i, ev.ID, ok, sub.Err())
				}
				if i%20 == 0 {
					time.Sleep(20 * time.Millisecond) // a reader slower than the burst
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("got %d of 200 events", i)
			}
		}
		wg.Wait()
	})
}

// TestCommitOrder: on PostgreSQL, with many writers at once on two
// instances, an event whose request was answered before another request
// was sent always has the smaller id, and ids have no gaps.
func TestCommitOrder(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	e := newEnv(t, db, events.Options{})
	// A second instance: it competes for leadership and fans out too.
	other, err := events.New(db.Gorm, events.Options{Logger: slog.New(slog.DiscardHandler), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, other)

	type span struct {
		id         string
		start, end time.Time
	}
	const writers, each = 16, 25
	spans := make([]span, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				start := time.Now()
				p := e.create(t, fmt.Sprintf("order-%d-%d", w, i), "1.00", true)
				spans[w*each+i] = span{p.ID, start, time.Now()}
			}
		})
	}
	wg.Wait()
	got := collect(t, other, events.Filter{}, 0, writers*each)
	idOf := map[string]int64{}
	for i, ev := range got {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.ID)
		}
		idOf[ev.Payment.ID] = ev.ID
	}
	violations := 0
	for _, a := range spans {
		for _, b := range spans {
			if a.end.Before(b.start) && idOf[a.id] > idOf[b.id] {
				violations++
			}
		}
	}
	if violations > 0 {
		t.Errorf("%d pairs where a request answered before another was sent got the larger id", violations)
	}
	if !e.ev.Leader() && !other.Leader() {
		t.Error("no instance is the leader")
	}
}

// TestLeaderHandOver: when the leader's connection dies, another instance
// takes over and numbering goes on without a gap.
func TestLeaderHandOver(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	e := newEnv(t, db, events.Options{})
	other, err := events.New(db.Gorm, events.Options{Logger: slog.New(slog.DiscardHandler), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, other)
	e.create(t, "handover-0", "1.00", true)
	collect(t, other, events.Filter{}, 0, 1)

	// Kill the session holding the leader's lock (the key is the
	// sequencer's, events/sequencer_postgres.go, for this test's schema).
	var schema string
	db.Gorm.Raw(`SELECT current_schema()`).Scan(&schema)
	h := fnv.New64a()
	h.Write([]byte("cmpay events sequencer\x00" + schema))
	key := h.Sum64()
	var killed int
	if err := db.Gorm.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objsubid = 1 AND classid::text::bigint = ? AND objid::text::bigint = ?`, key>>32, key&0xffffffff).Scan(&killed).Error; err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("killed %d leader sessions, want 1", killed)
	}
	for i := 1; i <= 10; i++ {
		e.create(t, fmt.Sprintf("handover-%d", i), "1.00", true)
	}
	got := collect(t, other, events.Filter{}, 0, 11)
	for i, ev := range got {
		if ev.ID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.ID)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !e.ev.Leader() && !other.Leader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader after the hand-over")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSweepKeepsNewest: old events are swept, but never the newest, so ids
// never go back.
func TestSweepKeepsNewest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		clock := time.Now()
		var mu sync.Mutex
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		e := newEnv(t, db, events.Options{Retention: time.Hour, Now: now})
		for i := range 3 {
			e.create(t, fmt.Sprintf("sweep-%d", i), "1.00", true)
			collect(t, e.ev, events.Filter{}, int64(i), 1) // numbered in a pass of its own
		}
		mu.Lock()
		clock = clock.Add(2 * time.Hour)
		mu.Unlock()
		n, err := e.ev.Sweep(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		left, _ := e.ev.Since(t.Context(), 0, events.Filter{}, 10)
		if n != 2 || len(left) != 1 || left[0].ID != 3 {
			t.Fatalf("swept %d, left %v; want 2 swept and event 3 kept", n, left)
		}
		e.create(t, "sweep-after", "1.00", true)
		got := collect(t, e.ev, events.Filter{}, 3, 1)
		if got[0].ID <= 3 {
			t.Errorf("the event after the sweep has id %d", got[0].ID)
		}
	})
}

// TestConcurrentChangesEmitTheirEvents: refunds racing on one payment, and
// a capture racing a cancel, each emit exactly one event per change that
// applied, and each event shows the payment right after its own change.
func TestConcurrentChangesEmitTheirEvents(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		ctx := t.Context()
		p := e.create(t, "race-refunds", "10.00", true)
		var wg sync.WaitGroup
		var applied sync.Map
		for i := range 12 {
			wg.Go(func() {
				res, err := e.svc.Refund(ctx, payments.RefundRequest{PaymentID: p.ID, Amount: ptr("1"), IdempotencyKey: fmt.Sprintf("race-r-%d", i), Origin: origin})
				if err == nil {
					applied.Store(res.Refund.ID, true)
				} else if !errors.Is(err, payments.ErrAmountExceeds) && !errors.Is(err, payments.ErrStateConflict) {
					t.Error(err)
				}
			})
		}
		auth := e.create(t, "race-auth", "5.00", false)
		for i := range 2 {
			wg.Go(func() {
				var err error
				if i == 0 {
					_, err = e.svc.Capture(ctx, payments.CaptureRequest{PaymentID: auth.ID, IdempotencyKey: "race-capture", Origin: origin})
				} else {
					_, err = e.svc.Cancel(ctx, payments.CancelRequest{PaymentID: auth.ID, IdempotencyKey: "race-cancel", Origin: origin})
				}
				if err != nil && !errors.Is(err, payments.ErrStateConflict) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		// 2 creates + 10 refunds + one of capture and cancel, then a marker
		// made after them all: an extra event would come before it.
		marker := e.create(t, "race-marker", "1.00", true)
		got := collect(t, e.ev, events.Filter{}, 0, 14)
		if got[13].Payment.ID != marker.ID {
			t.Errorf("event 14 is %s of %s, want the marker's creation: more events than the 13 changes", got[13].Type, got[13].Payment.ID)
		}
		got = got[:13]
		var refunded []string
		authEvents := 0
		for _, ev := range got {
			switch {
			case ev.Type == payments.EventRefunded:
				if _, ok := applied.Load(ev.Refund.ID); !ok {
					t.Errorf("event for refund %s, which was not applied", ev.Refund.ID)
				}
				refunded = append(refunded, ev.Payment.Refunded.String())
			case ev.Payment.ID == auth.ID && ev.Type != payments.EventCreated:
				authEvents++
			}
		}
		// In id order, each refund event shows one more unit refunded.
		for i, r := range refunded {
			if want := fmt.Sprintf("%d.00", i+1); r != want {
				t.Errorf("refund event %d shows %s refunded, want %s (all: %v)", i, r, want, refunded)
				break
			}
		}
		if len(refunded) != 10 || authEvents != 1 {
			t.Errorf("%d refund events, %d capture/cancel events; want 10 and 1", len(refunded), authEvents)
		}
	})
}
