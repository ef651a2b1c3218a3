package payments_test

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// seen is what a bundle told of duplicates: the hook's counts by operation
// and the log's ERROR lines.
type seen struct {
	mu     sync.Mutex
	counts map[payments.Operation]int
	log    bytes.Buffer
}

func (s *seen) onDuplicate(op payments.Operation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[op]++
}

func (s *seen) count(op payments.Operation) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// errorLines are the ERROR lines logged that name ref.
func (s *seen) errorLines(ref string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for line := range strings.Lines(s.log.String()) {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, ref) {
			out = append(out, line)
		}
	}
	return out
}

// Write lets the log write into the buffer under the lock.
func (s *seen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Write(p)
}

// dupBundle is a bundle over the Stripe double on the bundle's clock
// whose duplicates are counted and logged into seen.
func dupBundle(t *testing.T, db dbtest.DB) (*bundle, *stripedouble.Double, *seen) {
	t.Helper()
	s := &seen{counts: map[payments.Operation]int{}}
	b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, OnDuplicate: s.onDuplicate,
		Logger: slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	return b, d, s
}

// applyEventsOf applies to the bundle's service, through Stripe's decoder,
// the events the double recorded about intent ref, of type typ.
func applyEventsOf(t *testing.T, b *bundle, d *stripedouble.Double, ref, typ string) int {
	t.Helper()
	n := 0
	for _, e := range d.EventsFor(ref) {
		if e.Type != typ {
			continue
		}
		ev, err := stripe.DecodeEvent(e.Body)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
			t.Fatalf("apply %s: %v", e.Type, err)
		}
		n++
	}
	return n
}

func mustDuplicates(t *testing.T, b *bundle, id string) []payments.Duplicate {
	t.Helper()
	got, err := b.svc.DuplicatesOf(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A create whose key's answer is a stored 500 is sent again under _a2 and
// settled on _a2's intent; Stripe then rolls the first request forward,
// charging the payer a second time, and posts payment_intent.succeeded for
// it. The event is recorded as a duplicate once (a second delivery records
// nothing more), counted once and logged at ERROR once, and the payment
// stays as it was: its reference, status and amounts.
func TestRolledForwardCreateIsRecordedOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		settled, first := resentCreate(t, b, d, "rolled-forward")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if n := applyEventsOf(t, b, d, stray, "payment_intent.succeeded"); n != 1 {
				t.Fatalf("%d payment_intent.succeeded events about %s, want 1", n, stray)
			}
		}
		got := mustDuplicates(t, b, settled.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].Operation != payments.OpCreate ||
			got[0].Amount != (payments.Money{Minor: 1050, Currency: "BRL"}) || got[0].State != "captured" ||
			got[0].FoundBy != payments.FoundByEvent || got[0].Processor != "stripe" {
			t.Errorf("duplicates %+v, want %s, 10.50 BRL captured, found by its event", got, stray)
		}
		if n := s.count(payments.OpCreate); n != 1 {
			t.Errorf("counted %d duplicates, want 1", n)
		}
		if lines := s.errorLines(stray); len(lines) != 1 || !strings.Contains(lines[0], settled.ID) {
			t.Errorf("ERROR lines naming %s: %q, want one naming the payment too", stray, lines)
		}
		if after := b.mustGet(t, settled.ID); !reflect.DeepEqual(after, settled) {
			t.Errorf("the payment changed:\n%+v\nwant\n%+v", after, settled)
		}
	})
}

// A PROCESSING payment whose create's answer was lost receives the event
// of its own first intent: not a duplicate (its reference is not known
// yet; the intent is the payment's own), and the event waits for recovery,
// which settles the payment on that intent; applied again then, it is
// still not a duplicate.
func TestOwnIntentOfAProcessingPaymentIsNotADuplicate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.DropResponse})
		p := b.mustCreate(t, withToken(card("own-intent"), "pm_card_visa")).Payment
		intents := d.IntentsFor(p.ID)
		if p.Status != payments.StatusProcessing || len(intents) != 1 {
			t.Fatalf("first answer %s, intents %v; want PROCESSING, one intent made", p.Status, intents)
		}
		ev, err := stripe.DecodeEvent(d.EventsFor(intents[0])[0].Body)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.svc.ApplyProcessorEvent(t.Context(), ev); !errors.Is(err, payments.ErrPaymentNotKnown) {
			t.Errorf("the event while PROCESSING: %v, want ErrPaymentNotKnown", err)
		}
		got := recoverUntilSettled(t, b, p.ID)
		if got.ProcessorReference != intents[0] {
			t.Fatalf("settled on %q, want %s", got.ProcessorReference, intents[0])
		}
		if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpCreate) != 0 {
			t.Errorf("duplicates %+v (counted %d), want none", dups, s.count(payments.OpCreate))
		}
	})
}

// A create whose key's answer is a stored 500 is sent again under _a2,
// whose answer is a 424 (the intent made); Stripe then rolls the first
// request forward. Recovery's read finds two intents charged for the one
// operation: it settles the payment on one, as before, and records the
// other, once, however often it reads.
func TestRecoveryFindingTwoSettlesOneAndRecordsTheOther(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		// The request's, recovery's (the 500 replayed), then _a2's.
		d.FailNth(stripedouble.CreatePaymentIntent, 3, stripedouble.Fault{Kind: stripedouble.DependencyFailedAfter})
		p := b.mustCreate(t, withToken(card("found-two"), "pm_card_visa")).Payment
		for end := b.clock.Now().Add(time.Hour); d.Calls(stripedouble.CreatePaymentIntent) < 3; {
			if b.clock.Now().After(end) {
				t.Fatalf("_a2 not sent within an hour; keys %q", d.Keys(stripedouble.CreatePaymentIntent))
			}
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusProcessing {
			t.Fatalf("after _a2's 424: %s, want PROCESSING; calls %q", got.Status, b.calls(t, got))
		}
		keys := d.Keys(stripedouble.CreatePaymentIntent)
		if _, err := d.RollForward(keys[0]); err != nil {
			t.Fatal(err)
		}
		intents := d.IntentsFor(p.ID)
		if len(intents) != 2 {
			t.Fatalf("intents %v, want _a2's and the rolled-forward one", intents)
		}
		got := recoverUntilSettled(t, b, p.ID)
		for range 2 { // read again: nothing more recorded
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		other := intents[0]
		if got.ProcessorReference == other {
			other = intents[1]
		}
		dups := mustDuplicates(t, b, p.ID)
		if got.Status != payments.StatusCaptured || got.ProcessorReference == "" || len(dups) != 1 ||
			dups[0].Reference != other || dups[0].FoundBy != payments.FoundByRecovery || dups[0].State != "captured" {
			t.Errorf("settled %s on %q; duplicates %+v; want CAPTURED on one intent, the other (%s) recorded",
				got.Status, got.ProcessorReference, dups, other)
		}
		if n := s.count(payments.OpCreate); n != 1 {
			t.Errorf("counted %d duplicates, want 1", n)
		}
	})
}

// A refund whose key's answer is a stored 500 is sent again under _a2 and
// settled on _a2's refund; Stripe then rolls the first request forward,
// refunding the payer a second time, and posts charge.refunded listing
// both. The second refund is recorded once, over two deliveries, and the
// payment's refunded amount stays CMPay's one refund.
func TestRolledForwardRefundIsRecordedOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := faultedRefund(t, b, d, "refund-rolled-forward", stripedouble.ServerErrorStored)
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		keys := d.Keys(stripedouble.CreateRefund)
		if len(keys) != 2 || settled.Refunded.Minor != 400 {
			t.Fatalf("refunded %d under keys %q; want 400, sent again under _a2", settled.Refunded.Minor, keys)
		}
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if n := applyEventsOf(t, b, d, stray, "charge.refunded"); n != 1 {
				t.Fatalf("%d charge.refunded events listing %s, want 1", n, stray)
			}
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].Operation != payments.OpRefund || got[0].RefundID == "" ||
			got[0].Amount != (payments.Money{Minor: 400, Currency: "BRL"}) || got[0].State != "succeeded" {
			t.Errorf("duplicates %+v, want %s, 4.00 BRL succeeded", got, stray)
		}
		if n := s.count(payments.OpRefund); n != 1 {
			t.Errorf("counted %d refund duplicates, want 1", n)
		}
		if after := b.mustGet(t, p.ID); !reflect.DeepEqual(after, settled) {
			t.Errorf("the payment changed:\n%+v\nwant\n%+v", after, settled)
		}
	})
}

// A refund settled on _a2's refund, which the payer's bank then returns
// (failed after it succeeded); Stripe then rolls the first request
// forward, and its charge.refunded lists both: the payment's own refund
// failed, and the stray one succeeded. The stray's read fails: the event's
// own news is applied all the same (the refund FAILED, its amount no
// longer refunded), and the event, not stamped applied, is retried by the
// intake, which records the duplicate and changes the payment no further.
func TestStrayReadFailingDoesNotHoldUpTheEventsOwnNews(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := faultedRefund(t, b, d, "stray-read-fails", stripedouble.ServerErrorStored)
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		own := d.RefundsFor(mustRefund(t, b, p.ID).ID)
		if settled.Refunded.Minor != 400 || len(own) != 1 {
			t.Fatalf("refunded %d by %v; want 400 by _a2's refund", settled.Refunded.Minor, own)
		}
		if err := d.FailRefund(own[0], "expired_or_canceled_card"); err != nil {
			t.Fatal(err)
		}
		stray, err := d.RollForward(d.Keys(stripedouble.CreateRefund)[0])
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		for _, e := range d.EventsFor(stray) {
			if e.Type == "charge.refunded" {
				body = e.Body
			}
		}
		in, err := intake.New(db.Gorm, intake.Options{Processor: "stripe", Apply: b.svc, Decode: stripe.DecodeEvent,
			Verify: func(p []byte, _ string, _ time.Time) (processor.Event, error) { return stripe.DecodeEvent(p) },
			Now:    b.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		d.FailNext(stripedouble.GetRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		ev, err := in.Receive(t.Context(), body, "signed")
		if err != nil {
			t.Fatal(err)
		}
		applied := func() bool {
			t.Helper()
			got, err := in.EventsOf(t.Context(), settled.ProcessorReference)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				if e.ID == ev.ID {
					return e.AppliedAt != nil
				}
			}
			t.Fatalf("event %s not stored: %+v", ev.ID, got)
			return false
		}
		learned := b.mustGet(t, p.ID)
		if r := mustRefund(t, b, p.ID); learned.Refunded.Minor != 0 || r.Status != payments.RefundFailed {
			t.Errorf("with the stray's read failing: refunded %d, refund %s; want 0, FAILED", learned.Refunded.Minor, r.Status)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || applied() {
			t.Errorf("with the stray's read failing: duplicates %+v, applied %v; want none, unapplied", dups, applied())
		}
		if n, err := in.Retry(t.Context(), 10); err != nil || n != 1 || !applied() {
			t.Fatalf("Retry once the stray reads: %d applied, %v; want the event applied", n, err)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 1 || dups[0].Reference != stray || s.count(payments.OpRefund) != 1 {
			t.Errorf("duplicates %+v (counted %d), want %s once", dups, s.count(payments.OpRefund), stray)
		}
		if after := b.mustGet(t, p.ID); !reflect.DeepEqual(after, learned) {
			t.Errorf("the retry changed the payment again:\n%+v\nwant\n%+v", after, learned)
		}
	})
}

// callCounts counts the calls a service's OnProcessorCall is told of, by
// operation and outcome.
type callCounts struct {
	mu sync.Mutex
	n  map[payments.Operation]map[payments.CallOutcome]int
}

func (c *callCounts) onCall(op payments.Operation, out payments.CallOutcome, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[op] == nil {
		c.n[op] = map[payments.CallOutcome]int{}
	}
	c.n[op][out]++
}

func (c *callCounts) get(op payments.Operation, out payments.CallOutcome) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op][out]
}

// The reads of a stray PaymentIntent and of a stray refund are processor
// calls: counted (cmpay_processor_calls_total) under the stray's
// operation (one that got a 500 as UNKNOWN, as any read's), and not stored among the payment's
// processorCalls, since they read no operation of its own.
func TestStrayReadsAreCounted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		op    payments.Operation
		get   stripedouble.Endpoint
		event string
		stray func(t *testing.T, b *bundle, d *stripedouble.Double) (payments.Payment, string)
	}{
		{"create", payments.OpCreate, stripedouble.GetPaymentIntent, "payment_intent.succeeded",
			func(t *testing.T, b *bundle, d *stripedouble.Double) (payments.Payment, string) {
				d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
				p := b.mustCreate(t, withToken(card("stray-counted"), "pm_card_visa")).Payment
				p = recoverUntilSettled(t, b, p.ID)
				stray, err := d.RollForward(d.Keys(stripedouble.CreatePaymentIntent)[0])
				if err != nil {
					t.Fatal(err)
				}
				return p, stray
			}},
		{"refund", payments.OpRefund, stripedouble.GetRefund, "charge.refunded",
			func(t *testing.T, b *bundle, d *stripedouble.Double) (payments.Payment, string) {
				p := faultedRefund(t, b, d, "stray-refund-counted", stripedouble.ServerErrorStored)
				p = recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
				stray, err := d.RollForward(d.Keys(stripedouble.CreateRefund)[0])
				if err != nil {
					t.Fatal(err)
				}
				return p, stray
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
				calls := &callCounts{n: map[payments.Operation]map[payments.CallOutcome]int{}}
				b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, OnProcessorCall: calls.onCall})
				p, stray := c.stray(t, b, d)
				listed, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
				if err != nil {
					t.Fatal(err)
				}
				var body []byte
				for _, e := range d.EventsFor(stray) {
					if e.Type == c.event {
						body = e.Body
					}
				}
				ev, err := stripe.DecodeEvent(body)
				if err != nil {
					t.Fatal(err)
				}
				unknown0, ok0 := calls.get(c.op, payments.CallUnknown), calls.get(c.op, payments.CallSucceeded)
				d.FailNext(c.get, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
				if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err == nil {
					t.Fatal("applied with the stray's read failing; want its error")
				}
				if got := calls.get(c.op, payments.CallUnknown) - unknown0; got != 1 {
					t.Errorf("the failed read of %s counted %d times as UNKNOWN, want once", stray, got)
				}
				if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
				if got := calls.get(c.op, payments.CallSucceeded) - ok0; got != 1 {
					t.Errorf("the read of %s counted %d times as SUCCEEDED, want once", stray, got)
				}
				after, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(after, listed) {
					t.Errorf("processorCalls after the stray's reads:\n%+v\nwant as before\n%+v", after, listed)
				}
			})
		})
	}
}

// A refund whose key's answer is a stored 500 is sent again under _a2,
// whose refund stays pending; Stripe then rolls the first request
// forward, pending too: recovery, choosing between two pending refunds,
// records neither. Then the newer (the rolled-forward one) fails and
// _a2's succeeds: recovery's list of the payment's refunds settles the
// refund on the one that moved the money: SUCCEEDED, 4.00 refunded once,
// and no duplicate, since the payer was refunded once. Settled on the failed one, the refund would be
// FAILED with its amount released while the payer had it back, and the
// one refund that moved money recorded as a second.
func TestRecoverySettlesARefundOnTheOneThatMovedMoney(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := &seen{counts: map[payments.Operation]int{}}
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, RefundsPending: true, OnDuplicate: s.onDuplicate,
			Logger: slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		p := faultedRefund(t, b, d, "refund-one-failed", stripedouble.ServerErrorStored)
		for end := b.clock.Now().Add(time.Hour); d.Calls(stripedouble.CreateRefund) < 2 ||
			len(d.Keys(stripedouble.CreateRefund)) < 2; {
			if b.clock.Now().After(end) {
				t.Fatalf("_a2 not sent within an hour; keys %q", d.Keys(stripedouble.CreateRefund))
			}
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		keys := d.Keys(stripedouble.CreateRefund)
		b.clock.Advance(time.Minute) // the rolled-forward refund is the newer
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		refunds := d.RefundsFor(mustRefund(t, b, p.ID).ID)
		if len(refunds) != 2 {
			t.Fatalf("refunds %v, want _a2's and the rolled-forward one", refunds)
		}
		// Both pending: recovery chooses none for good yet, so records none.
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 {
			t.Fatalf("with both refunds pending, duplicates %+v; want none yet", dups)
		}
		for _, re := range refunds {
			if err := d.SettleRefund(re, re != stray, "expired_or_canceled_card"); err != nil {
				t.Fatal(err)
			}
		}
		got := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if r := mustRefund(t, b, p.ID); got.Refunded.Minor != 400 || r.Status != payments.RefundSucceeded {
			t.Errorf("refunded %d, refund %+v; want 4.00 refunded, SUCCEEDED", got.Refunded.Minor, r)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpRefund) != 0 {
			t.Errorf("duplicates %+v (counted %d), want none: the payer was refunded once", dups, s.count(payments.OpRefund))
		}
	})
}

// mustRefund is payment id's one refund.
func mustRefund(t *testing.T, b *bundle, id string) payments.Refund {
	t.Helper()
	refunds, err := b.svc.Refunds(t.Context(), b.mustGet(t, id))
	if err != nil || len(refunds) != 1 {
		t.Fatalf("refunds %+v, %v; want one", refunds, err)
	}
	return refunds[0]
}

// A create for a later capture whose key's answer is a stored 500 is sent
// again under _a2 and settled AUTHORIZED; Stripe then rolls the first
// request forward, authorizing the card a second time, and announces it
// by payment_intent.amount_capturable_updated alone (the event the Stripe
// endpoint must be subscribed to, docs/operations/stripe.md). That event
// records the second authorization, and the payment stays as it was.
func TestRolledForwardAuthorizationIsRecordedByItsEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		req := withToken(card("rolled-forward-auth"), "pm_card_visa")
		req.Capture = new(false)
		p := b.mustCreate(t, req).Payment
		settled := recoverUntilSettled(t, b, p.ID)
		keys := d.Keys(stripedouble.CreatePaymentIntent)
		if settled.Status != payments.StatusAuthorized || len(keys) != 2 {
			t.Fatalf("settled %s under keys %q; want AUTHORIZED, sent again under _a2", settled.Status, keys)
		}
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if n := applyEventsOf(t, b, d, stray, "payment_intent.amount_capturable_updated"); n != 1 {
			t.Fatalf("%d payment_intent.amount_capturable_updated events about %s, want 1", n, stray)
		}
		dups := mustDuplicates(t, b, p.ID)
		if len(dups) != 1 || dups[0].Reference != stray || dups[0].State != "authorized" || s.count(payments.OpCreate) != 1 {
			t.Errorf("duplicates %+v (counted %d), want %s authorized", dups, s.count(payments.OpCreate), stray)
		}
		if after := b.mustGet(t, p.ID); !reflect.DeepEqual(after, settled) {
			t.Errorf("the payment changed:\n%+v\nwant\n%+v", after, settled)
		}
	})
}
