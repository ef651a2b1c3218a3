package payments_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// dayOldSettled is how long after a create was stored its sends have
// surely ended and show in search, with the test's times and the default
// search lag: 23 hours (the key's lifetime less an hour), the timeout,
// ten minutes (a request's time at Stripe), the search lag, a second.
const dayOldSettled = 23*time.Hour + testTimeout + 10*time.Minute + processor.DefaultStripeSearchLag + time.Second

// recoverAt moves b's clock to at (from start) and runs one recovery round.
func recoverAt(t *testing.T, b *bundle, start time.Time, at time.Duration) {
	t.Helper()
	b.clock.Advance(start.Add(at).Sub(b.clock.Now()))
	if _, err := b.svc.RecoverDue(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// A create Stripe never made (its 500 stored under the key, or refused
// before Stripe acted with every instance down for a day), a day later:
// it is never sent again, and once none of its sends can still be running
// or missing from search, Stripe's consistent list shows no intent with
// its id. It is declined not_created, with its event and its calls, and
// the client's retry with its key answers the decline. Read before that
// moment, it is left PROCESSING and no list is read.
func TestADayOldCreateNeverMadeIsDeclined(t *testing.T) {
	t.Parallel()
	faults := map[stripedouble.FaultKind]bool{stripedouble.ServerErrorStored: true, stripedouble.ServerErrorBefore: false}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for fault, replayed := range faults {
			t.Run(fault.String(), func(t *testing.T) {
				b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
				start := b.clock.Now()
				req := withToken(card("never-made-"+fault.String()), "pm_card_visa")
				d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: fault})
				p := b.mustCreate(t, req).Payment
				if replayed {
					recoverAt(t, b, start, testRecovery+time.Second) // the replayed 500
				}
				sends := d.Calls(stripedouble.CreatePaymentIntent)
				recoverAt(t, b, start, 23*time.Hour+5*time.Minute) // a send could still be running
				if got := b.mustGet(t, p.ID); got.Status != payments.StatusProcessing || d.Calls(stripedouble.ListPaymentIntents) != 0 {
					t.Fatalf("23 h 5 min on: %s, %d list pages; want PROCESSING, none read", got.Status,
						d.Calls(stripedouble.ListPaymentIntents))
				}
				recoverAt(t, b, start, dayOldSettled)
				got := b.mustGet(t, p.ID)
				if got.Status != payments.StatusDeclined || got.DeclineCode != payments.DeclineNotCreated {
					t.Fatalf("a day on: %s %q, want DECLINED %q; calls %q", got.Status, got.DeclineCode,
						payments.DeclineNotCreated, b.calls(t, got))
				}
				if n, intents := d.Calls(stripedouble.CreatePaymentIntent), d.IntentsFor(p.ID); n != sends || len(intents) != 0 {
					t.Errorf("creates sent %d (before the day %d), intents %v; want none sent, none made", n, sends, intents)
				}
				if ev := b.events(t, p.ID); len(ev) != 1 || ev["PAYMENT_DECLINED"] != 1 {
					t.Errorf("events %v, want one PAYMENT_DECLINED", ev)
				}
				calls := b.calls(t, got)
				want := []string{"CREATE_PAYMENT ERROR none_found", "CREATE_PAYMENT DECLINED " + payments.DeclineNotCreated}
				if len(calls) < 3 || !slices.Equal(calls[len(calls)-2:], want) {
					t.Errorf("calls %q, want the sends, then %q", calls, want)
				}
				again := b.mustCreate(t, req)
				if !again.Replayed || again.Payment.ID != p.ID || again.Payment.Status != payments.StatusDeclined ||
					again.Payment.DeclineCode != payments.DeclineNotCreated {
					t.Errorf("the client's retry: replayed %v, %s %s %q; want the decline replayed", again.Replayed,
						again.Payment.ID, again.Payment.Status, again.Payment.DeclineCode)
				}
				if open := mustOpenUnknown(t, b.svc); open != 0 {
					t.Errorf("%d unknown outcomes still open", open)
				}
			})
		}
	})
}

// A create Stripe made (its 500 came after the intent, or its answer was
// lost), read a day later: found by search, it settles at once, as
// before; with search lagging two days, it is found in the consistent
// list once its sends have settled, and settles then. Never declined,
// never sent again.
func TestADayOldCreateMadeIsSettled(t *testing.T) {
	t.Parallel()
	faults := []stripedouble.FaultKind{stripedouble.ServerErrorAfter, stripedouble.DropResponse}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, fault := range faults {
			for _, lag := range []time.Duration{0, 48 * time.Hour} {
				t.Run(fault.String()+"/search_lag_"+lag.String(), func(t *testing.T) {
					b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: lag})
					start := b.clock.Now()
					d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: fault})
					p := b.mustCreate(t, withToken(card("made-"+fault.String()+"-"+lag.String()), "pm_card_visa")).Payment
					if p.Status != payments.StatusProcessing {
						t.Fatalf("first answer %s, want PROCESSING", p.Status)
					}
					recoverAt(t, b, start, 23*time.Hour+5*time.Minute)
					if got := b.mustGet(t, p.ID); (got.Status == payments.StatusCaptured) != (lag == 0) {
						t.Errorf("23 h 5 min on, search lagging %s: %s", lag, got.Status)
					}
					recoverAt(t, b, start, dayOldSettled)
					got := b.mustGet(t, p.ID)
					intents := d.IntentsFor(p.ID)
					if got.Status != payments.StatusCaptured || len(intents) != 1 || got.ProcessorReference != intents[0] ||
						d.Ledger(intents[0]).Captures != 1 {
						t.Fatalf("CMPay %s %s; the double's intents %v; want CAPTURED, the one intent", got.Status,
							got.ProcessorReference, intents)
					}
					if n := d.Calls(stripedouble.CreatePaymentIntent); n != 1 {
						t.Errorf("%d creates sent, want the first alone", n)
					}
					if ev := b.events(t, p.ID); len(ev) != 1 || ev["PAYMENT_CREATED"] != 1 {
						t.Errorf("events %v, want one PAYMENT_CREATED", ev)
					}
				})
			}
		}
	})
}

// A create whose stored 500 was resolved by a send under a new key at
// 22 h 55 min, that send answered a 500 after the intent was made, and every
// instance down until the create is a day old: search lags two days, so
// only Stripe's list can find the intent, and its window reaches past
// that late send. The create settles; it is not declined.
func TestADayOldCreateSentLateIsFoundInTheList(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: 48 * time.Hour})
		start := b.clock.Now()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("sent-late"), "pm_card_visa")).Payment
		recoverAt(t, b, start, testRecovery+time.Second) // the replayed 500
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		recoverAt(t, b, start, 22*time.Hour+55*time.Minute) // listed nowhere: sent under _a2, a 500 after the intent
		if keys, got := d.Keys(stripedouble.CreatePaymentIntent), b.mustGet(t, p.ID); len(keys) != 2 ||
			len(d.IntentsFor(p.ID)) != 1 || got.Status != payments.StatusProcessing {
			t.Fatalf("keys %q, intents %v, %s; want _a2 sent, its intent made, the payment PROCESSING", keys,
				d.IntentsFor(p.ID), got.Status)
		}
		recoverAt(t, b, start, dayOldSettled)
		got := b.mustGet(t, p.ID)
		intents := d.IntentsFor(p.ID)
		if got.Status != payments.StatusCaptured || len(intents) != 1 || got.ProcessorReference != intents[0] {
			t.Fatalf("CMPay %s %q %s; the double's intents %v; want CAPTURED from the list", got.Status, got.DeclineCode,
				got.ProcessorReference, intents)
		}
		if keys := d.Keys(stripedouble.CreatePaymentIntent); len(keys) != 2 {
			t.Errorf("keys %q, want the first and _a2 alone", keys)
		}
	})
}

// With STRIPE_SEARCH_LAG at an hour, a day-old create Stripe never made
// waits that hour longer before it is declined: at 23 h 13 min, when the
// default lag would have declined it, it is still PROCESSING.
func TestADayOldCreateWaitsForTheConfiguredSearchLag(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, SearchLag: time.Hour})
		start := b.clock.Now()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		p := b.mustCreate(t, withToken(card("lag-hour"), "pm_card_visa")).Payment
		recoverAt(t, b, start, dayOldSettled)
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusProcessing {
			t.Fatalf("inside the configured lag: %s, want PROCESSING", got.Status)
		}
		recoverAt(t, b, start, dayOldSettled-processor.DefaultStripeSearchLag+time.Hour)
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusDeclined || got.DeclineCode != payments.DeclineNotCreated {
			t.Errorf("past the configured lag: %s %q, want DECLINED %q", got.Status, got.DeclineCode, payments.DeclineNotCreated)
		}
	})
}

// A create met by a wrong API key (Stripe: 401) is the one wait recovery
// cannot end alone: every call, reads included, is refused, and each says
// so (code authentication); a day later it is still PROCESSING, never
// declined on refused reads. Once an instance runs with the right key, the
// next recovery declines it (Stripe never made it).
func TestADayOldCreateWaitsForTheAPIKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, APIKey: "sk_live_revoked"})
		start := b.clock.Now()
		p := b.mustCreate(t, withToken(card("wrong-key"), "pm_card_visa")).Payment
		recoverAt(t, b, start, testRecovery+time.Second)
		recoverAt(t, b, start, 25*time.Hour)
		got := b.mustGet(t, p.ID)
		calls := b.calls(t, got)
		if got.Status != payments.StatusProcessing || len(calls) != 3 {
			t.Fatalf("a day on with a wrong key: %s, calls %q; want PROCESSING, three calls", got.Status, calls)
		}
		for _, c := range calls {
			if c != "CREATE_PAYMENT ERROR "+payments.CodeCredentialsRefused {
				t.Errorf("call %q, want each refused for the credentials", c)
			}
		}
		b.svc = mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, Processor: stripeConn(t, d, testTimeout),
			ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
		recoverAt(t, b, start, 25*time.Hour+testRecovery+time.Second)
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusDeclined || got.DeclineCode != payments.DeclineNotCreated {
			t.Errorf("with the right key: %s %q, want DECLINED %q", got.Status, got.DeclineCode, payments.DeclineNotCreated)
		}
	})
}

// sendUnrecordedAt moves b's clock to at (from start) and runs one
// recovery round whose send of p's create reaches Stripe, which makes the
// intent, and then dies with Stripe's answer on the way (its context
// ends): the send is never recorded in processor_calls.
func sendUnrecordedAt(t *testing.T, b *bundle, d *stripedouble.Double, start time.Time, at time.Duration, p payments.Payment) {
	t.Helper()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold})
	b.clock.Advance(start.Add(at).Sub(b.clock.Now()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := b.svc.RecoverDue(ctx); done <- err }()
	for deadline := time.Now().Add(5 * time.Second); len(d.IntentsFor(p.ID)) == 0; {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("the send never reached the double")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	for _, c := range b.calls(t, b.mustGet(t, p.ID)) {
		if strings.HasPrefix(c, "CREATE_PAYMENT SUCCEEDED") {
			t.Fatalf("calls %q: the send was recorded", b.calls(t, b.mustGet(t, p.ID)))
		}
	}
}

// settlesFromTheList runs the recovery round at dayOldSettled (from
// start) and checks that p, whose create Stripe made and captured once,
// is then CAPTURED with that intent, and that the round sent no create.
func settlesFromTheList(t *testing.T, b *bundle, d *stripedouble.Double, start time.Time, p payments.Payment) {
	t.Helper()
	sent := d.Calls(stripedouble.CreatePaymentIntent)
	recoverAt(t, b, start, dayOldSettled)
	got := b.mustGet(t, p.ID)
	intents := d.IntentsFor(p.ID)
	if len(intents) != 1 {
		t.Fatalf("the double's intents %v, want one", intents)
	}
	if got.Status != payments.StatusCaptured || got.ProcessorReference != intents[0] {
		t.Fatalf("CMPay %s %q %q while Stripe holds intent %v (captures %d); calls %q; want CAPTURED from the list",
			got.Status, got.DeclineCode, got.ProcessorReference, intents, d.Ledger(intents[0]).Captures, b.calls(t, got))
	}
	if n := d.Calls(stripedouble.CreatePaymentIntent); n != sent {
		t.Errorf("%d creates sent a day on, want none", n-sent)
	}
}

// A create whose stored 500 is resolved by a send under _a2 at 22 h 59 min
// that Stripe makes, while the instance sending it dies before recording
// it; search lags an hour (as in a Stripe outage). A day on, the list's
// window reaches past that send, stamped on the operation before it
// started: the create settles CAPTURED, never declined not_created.
func TestADayOldCreateResentUnderANewKeyUnrecordedIsFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		start := b.clock.Now()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("sent-unrecorded"), "pm_card_visa")).Payment
		recoverAt(t, b, start, testRecovery+time.Second) // the replayed 500, read: stored
		sendUnrecordedAt(t, b, d, start, 22*time.Hour+59*time.Minute, p)
		if keys := d.Keys(stripedouble.CreatePaymentIntent); len(keys) != 2 {
			t.Fatalf("keys %q, want the first and _a2", keys)
		}
		settlesFromTheList(t, b, d, start, p)
	})
}

// The same under the create's own key: its first send never reached
// Stripe, every instance is down until 22 h 59 min, when recovery sends it
// again under that key, Stripe makes it and the instance dies before
// recording the send. No new key marks that send; the stamp does.
func TestADayOldCreateResentUnderItsKeyUnrecordedIsFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		start := b.clock.Now()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.DropRequest})
		p := b.mustCreate(t, withToken(card("resent-unrecorded"), "pm_card_visa")).Payment
		if p.Status != payments.StatusProcessing {
			t.Fatalf("first answer %s, want PROCESSING", p.Status)
		}
		sendUnrecordedAt(t, b, d, start, 22*time.Hour+59*time.Minute, p)
		// The double counts no dropped request.
		if keys := d.Keys(stripedouble.CreatePaymentIntent); len(keys) != 1 || keys[0] != "cmpay_op_"+strings.TrimPrefix(p.ID, "pay_") {
			t.Fatalf("keys %q, want the create's own key once", keys)
		}
		settlesFromTheList(t, b, d, start, p)
	})
}
