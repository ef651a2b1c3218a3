package intake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

const secret = "whsec_intake_test"

// applier records what it was asked to apply; while notYet holds a
// reference, events of that payment are not applicable yet.
type applier struct {
	mu      sync.Mutex
	applied []string
	notYet  map[string]bool
	// tried counts, when not nil, every event it was asked to apply.
	tried map[string]int
}

func (a *applier) ApplyProcessorEvent(_ context.Context, ev processor.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tried != nil {
		a.tried[ev.ID]++
	}
	if a.notYet[ev.PaymentReference] {
		return intake.ErrNotYet
	}
	a.applied = append(a.applied, ev.ID)
	return nil
}

func (a *applier) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, got := range a.applied {
		if got == id {
			n++
		}
	}
	return n
}

// paidPix makes a Pix PaymentIntent at the double through the real
// connector and has it paid: the double records payment_intent.succeeded.
func paidPix(t *testing.T) (stripedouble.Event, string) {
	t.Helper()
	d := stripedouble.New(stripedouble.Options{})
	t.Cleanup(d.Close)
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase = "stripe", "sk_test_intake", d.URL()
	conn, err := stripe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	p, err := conn.CreatePayment(t.Context(), processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op1", PaymentID: "pay_1",
		AmountMinor: 1050, Currency: "BRL", Method: processor.MethodPix, Capture: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pay(p.Reference); err != nil {
		t.Fatal(err)
	}
	for _, ev := range d.EventsFor(p.Reference) {
		if ev.Type == "payment_intent.succeeded" {
			return ev, p.Reference
		}
	}
	t.Fatalf("no %s among %v", "payment_intent.succeeded", d.EventsFor(p.Reference))
	return stripedouble.Event{}, ""
}

func newService(t *testing.T, db dbtest.DB, a intake.Applier) *intake.Service {
	t.Helper()
	s, err := intake.New(db.Gorm, intake.Options{
		Processor: "stripe",
		Verify: func(payload []byte, sig string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(payload, sig, secret, now)
		},
		Decode: stripe.DecodeEvent,
		Apply:  a,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An event is stored once and applied once, however often it comes; a
// refused one changes nothing; one that names a payment not known yet is
// kept and applied by Retry.
func TestReceive(t *testing.T) {
	t.Parallel()
	ev, ref := paidPix(t)
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		a := &applier{notYet: map[string]bool{ref: true}}
		s := newService(t, db, a)
		sig := stripedouble.Sign(ev.Body, time.Now(), secret)

		for _, bad := range []struct{ name, sig string }{
			{"another secret", stripedouble.Sign(ev.Body, time.Now(), "whsec_other")},
			{"too old", stripedouble.Sign(ev.Body, time.Now().Add(-10*time.Minute), secret)},
			{"no signature", ""},
		} {
			if _, err := s.Receive(t.Context(), ev.Body, bad.sig); !errors.Is(err, intake.ErrRefused) {
				t.Errorf("%s: %v, want ErrRefused", bad.name, err)
			}
		}
		if got, err := s.EventsOf(t.Context(), ref); err != nil || len(got) != 0 {
			t.Fatalf("after refusals: %v, %v; want nothing stored", got, err)
		}

		// Before the payment is known: stored, not applied, and a second
		// delivery stores nothing more.
		for range 2 {
			if _, err := s.Receive(t.Context(), ev.Body, sig); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.EventsOf(t.Context(), ref)
		if err != nil || len(got) != 1 || got[0].ID != ev.ID || got[0].AppliedAt != nil || got[0].Type != "payment_intent.succeeded" {
			t.Fatalf("stored: %+v, %v; want the one event, unapplied", got, err)
		}
		if n, err := s.Retry(t.Context(), 10); err != nil || n != 0 {
			t.Errorf("Retry while the payment is unknown: %d, %v", n, err)
		}

		// Once it is known, Retry applies it, once; later deliveries
		// apply nothing again.
		a.mu.Lock()
		delete(a.notYet, ref)
		a.mu.Unlock()
		if n, err := s.Retry(t.Context(), 10); err != nil || n != 1 {
			t.Fatalf("Retry: %d, %v; want 1", n, err)
		}
		if _, err := s.Receive(t.Context(), ev.Body, sig); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Retry(t.Context(), 10); n != 0 || a.count(ev.ID) != 1 {
			t.Errorf("applied %d times (Retry then found %d); want once", a.count(ev.ID), n)
		}
		if got, _ := s.EventsOf(t.Context(), ref); len(got) != 1 || got[0].AppliedAt == nil {
			t.Errorf("after applying: %+v", got)
		}
	})
}

// Each delivery of an event not applied yet is handed to the applier, the
// first as much as a repeat of one that could not be applied before; a
// repeat of one applied is not.
func TestReceiveAppliesEveryDeliveryUntilApplied(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		now := time.Now()
		a := &applier{notYet: map[string]bool{"pi_later": true}, tried: map[string]int{}}
		_, receive := retryService(t, db, a, &now)
		tried := func(id string) int {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.tried[id]
		}
		receive("evt_now", "pi_now")
		receive("evt_now", "pi_now")
		if tried("evt_now") != 1 || a.count("evt_now") != 1 {
			t.Errorf("an applicable event delivered twice: tried %d times, applied %d; want once each",
				tried("evt_now"), a.count("evt_now"))
		}
		receive("evt_later", "pi_later")
		a.mu.Lock()
		delete(a.notYet, "pi_later")
		a.mu.Unlock()
		receive("evt_later", "pi_later")
		receive("evt_later", "pi_later")
		if tried("evt_later") != 2 || a.count("evt_later") != 1 {
			t.Errorf("an event applicable from its second delivery, delivered thrice: tried %d times, applied %d; "+
				"want twice and once", tried("evt_later"), a.count("evt_later"))
		}
	})
}

// Events that wait on a payment do not keep a newer, applicable one from
// its turn, however many of them there are.
func TestRetryReachesNewEventsBehindWaitingOnes(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	now := time.Now()
	a := &applier{notYet: map[string]bool{"pi_waiting": true}}
	s, receive := retryService(t, db, a, &now)
	post := func(id, ref string) {
		receive(id, ref)
		now = now.Add(time.Millisecond)
	}
	for i := range 70 {
		post(fmt.Sprintf("evt_wait_%d", i), "pi_waiting")
	}
	a.mu.Lock()
	a.notYet["pi_late"] = true // not ready when it comes either
	a.mu.Unlock()
	post("evt_late", "pi_late")
	a.mu.Lock()
	delete(a.notYet, "pi_late")
	a.mu.Unlock()
	if n, err := s.Retry(t.Context(), 64); err != nil || n != 1 || a.count("evt_late") != 1 {
		t.Errorf("Retry: %d applied, %v; evt_late applied %d times, want once", n, err, a.count("evt_late"))
	}
	now = now.Add(25 * time.Hour) // past RetryFor: left to the poller
	if n, err := s.Retry(t.Context(), 64); err != nil || n != 0 {
		t.Errorf("Retry a day later: %d, %v", n, err)
	}
}

// More events than a batch wait on a payment that stays unresolved, and
// an older one can be applied: the retrier's walk, a page a round from
// newest to oldest, reaches it within ceil(n/batch)+1 rounds, and has
// tried every waiting one by then. Pairs of events share their time of
// receipt, so that the walk's cursor is also tested on its id.
func TestRetryReachesOlderEventsBehindWaitingOnes(t *testing.T) {
	t.Parallel()
	const batch, waiting = 8, 21
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		a := &applier{notYet: map[string]bool{"pi_waiting": true, "pi_old": true}, tried: map[string]int{}}
		s, post := retryService(t, db, a, &now)
		post("evt_old", "pi_old")
		for i := range waiting {
			if i%2 == 0 {
				now = now.Add(time.Millisecond)
			}
			post(fmt.Sprintf("evt_wait_%02d", i), "pi_waiting")
		}
		a.mu.Lock()
		delete(a.notYet, "pi_old")
		clear(a.tried)
		a.mu.Unlock()
		rounds := (waiting+batch-1)/batch + 1
		for round := 1; a.count("evt_old") == 0; round++ {
			if round > rounds {
				t.Fatalf("evt_old not applied in %d rounds of %d", rounds, batch)
			}
			now = now.Add(time.Second)
			if _, err := s.Retry(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for i := range waiting {
			if id := fmt.Sprintf("evt_wait_%02d", i); a.tried[id] == 0 {
				t.Errorf("%s not tried again by the time evt_old was applied", id)
			}
		}
	})
}

// retryService is an intake service on db that hands events to a, at the
// time *now says, and a function that receives a payment_intent.succeeded
// event id about the PaymentIntent ref, created at *now.
func retryService(t *testing.T, db dbtest.DB, a *applier, now *time.Time) (*intake.Service, func(id, ref string)) {
	t.Helper()
	s, err := intake.New(db.Gorm, intake.Options{Processor: "stripe", Apply: a, Decode: stripe.DecodeEvent,
		Verify: func(p []byte, _ string, _ time.Time) (processor.Event, error) { return stripe.DecodeEvent(p) },
		Now:    func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return s, func(id, ref string) {
		body := fmt.Sprintf(`{"id":%q,"object":"event","created":%d,"type":"payment_intent.succeeded",`+
			`"data":{"object":{"id":%q,"object":"payment_intent","status":"succeeded"}}}`, id, now.Unix(), ref)
		if _, err := s.Receive(t.Context(), []byte(body), "signed"); err != nil {
			t.Fatal(err)
		}
	}
}
