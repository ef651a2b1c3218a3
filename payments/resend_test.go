package payments_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// storedChange is a capture, cancel or refund as the stored-500 tests run
// it: the endpoint it reaches, how the payment starts, the request, when
// it is settled, and what CMPay and the double must then both say.
type storedChange struct {
	endpoint stripedouble.Endpoint
	capture  bool
	run      func(ctx context.Context, svc *payments.Service, id, key string) (payments.ChangeResult, error)
	settled  func(p payments.Payment) bool
	check    func(p payments.Payment, l stripedouble.Ledger, status string) error
}

var storedChanges = map[string]storedChange{
	"capture": {stripedouble.CapturePaymentIntent, false,
		func(ctx context.Context, svc *payments.Service, id, key string) (payments.ChangeResult, error) {
			return svc.Capture(ctx, payments.CaptureRequest{PaymentID: id, IdempotencyKey: key})
		},
		func(p payments.Payment) bool { return p.PendingOperation == "" },
		func(p payments.Payment, l stripedouble.Ledger, status string) error {
			if p.Status != payments.StatusCaptured || p.Captured.Minor != l.Captured || status != "succeeded" ||
				l.Captures != 1 || l.Captured != 1050 {
				return fmt.Errorf("CMPay %s captured %d; the double %s %+v; want captured once, 1050", p.Status, p.Captured.Minor, status, l)
			}
			return nil
		}},
	"cancel": {stripedouble.CancelPaymentIntent, false,
		func(ctx context.Context, svc *payments.Service, id, key string) (payments.ChangeResult, error) {
			return svc.Cancel(ctx, payments.CancelRequest{PaymentID: id, IdempotencyKey: key})
		},
		func(p payments.Payment) bool { return p.PendingOperation == "" },
		func(p payments.Payment, l stripedouble.Ledger, status string) error {
			if p.Status != payments.StatusCanceled || status != "canceled" || l.Cancels != 1 || l.Captured != 0 {
				return fmt.Errorf("CMPay %s; the double %s %+v; want canceled once", p.Status, status, l)
			}
			return nil
		}},
	"refund": {stripedouble.CreateRefund, true,
		func(ctx context.Context, svc *payments.Service, id, key string) (payments.ChangeResult, error) {
			return svc.Refund(ctx, payments.RefundRequest{PaymentID: id, IdempotencyKey: key, Amount: new("4")})
		},
		func(p payments.Payment) bool { return p.Reserved.Minor == 0 },
		func(p payments.Payment, l stripedouble.Ledger, _ string) error {
			if p.Status != payments.StatusPartiallyRefunded || p.Refunded.Minor != l.Refunded || l.Refunds != 1 || l.Refunded != 400 {
				return fmt.Errorf("CMPay %s refunded %d; the double %+v; want one refund of 400", p.Status, p.Refunded.Minor, l)
			}
			return nil
		}},
}

// A capture, cancel or refund whose request failed inside Stripe, the 500
// stored under its key and replayed (500_stored: nothing happened), is
// read, found not done, and sent again under one new key, within the
// first recovery rounds; one whose 500 came after the money moved
// (500_after) is settled from the read, under its first key alone. Either
// way the money moved once and CMPay ends as the double's record.
func TestStoredErrorChangeIsSentAgainUnderANewKey(t *testing.T) {
	t.Parallel()
	faults := map[stripedouble.FaultKind]int{stripedouble.ServerErrorStored: 2, stripedouble.ServerErrorAfter: 1}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		for name, c := range storedChanges {
			for fault, wantKeys := range faults {
				t.Run(name+"/"+fault.String(), func(t *testing.T) {
					p := stripeCard(t, b, name+"-"+fault.String(), c.capture)
					d.FailNext(c.endpoint, stripedouble.Fault{Kind: fault})
					res, err := c.run(t.Context(), b.svc, p.ID, name+"-"+fault.String()+"-op")
					if err != nil || c.settled(res.Payment) {
						t.Fatalf("first answer %+v, %v; want the operation in flight", res.Payment, err)
					}
					before := len(d.Keys(c.endpoint))
					got := recoverUntil(t, b, p.ID, c.settled)
					if err := c.check(got, d.Ledger(got.ProcessorReference), d.Status(got.ProcessorReference)); err != nil {
						t.Error(err)
					}
					keys := d.Keys(c.endpoint)[before-1:]
					if len(keys) != wantKeys || wantKeys == 2 && keys[1] != keys[0]+"_a2" {
						t.Errorf("keys sent %q, want %d (the second the first's _a2)", keys, wantKeys)
					}
					calls := b.calls(t, got)
					if len(calls) == 0 || !strings.HasSuffix(calls[len(calls)-1], "SUCCEEDED ") {
						t.Errorf("calls %q, want the last one SUCCEEDED", calls)
					}
					if open := mustOpenUnknown(t, b.svc); open != 0 {
						t.Errorf("%d unknown outcomes still open", open)
					}
				})
			}
		}
	})
}

// The new key is shown with the write that carried it, and the read that
// judged the operation with the key it read under.
func TestStoredErrorNewKeyShowsInTheCalls(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := storedErrorCapture(t, b, d, "keys-shown", false)
		got := recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
		all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{got})
		if err != nil {
			t.Fatal(err)
		}
		key := d.Keys(stripedouble.CapturePaymentIntent)[0]
		var seen []string
		for _, c := range all[0] {
			if c.Operation == payments.OpCapture {
				seen = append(seen, fmt.Sprintf("%s %s", c.Outcome, c.ProcessorKey))
			}
		}
		// The request's 500, recovery's replayed 500, the read (the intent
		// still authorized), the capture under the new key.
		want := []string{"UNKNOWN " + key, "UNKNOWN " + key, "SUCCEEDED " + key, "SUCCEEDED " + key + "_a2"}
		if !slices.Equal(seen, want) {
			t.Errorf("capture calls %q, want %q", seen, want)
		}
	})
}

// Two instances recover one capture whose key's answer is a stored 500.
// The first reads the intent (still authorized) and is held there past
// its lease; the second claims the operation, reads, stores the new key
// and captures. The first's read then comes back with the old record: it
// finds the key changed and the lease gone, and sends nothing. One new key
// is used, and the intent is captured once.
func TestStoredErrorRaceUsesOneNewKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := storedErrorCapture(t, b, d, "race-stored", true)
		// The first instance: a patient one (its reads may take seconds).
		slow := stripeConn(t, d, 5*time.Second)
		first := mustService(t, b.db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, Processor: slow,
			ProcessorTimeout: 5 * time.Second, RecoveryAfter: testRecovery})
		hold := make(chan struct{})
		d.FailNext(stripedouble.GetPaymentIntent, stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold})
		reads := d.Calls(stripedouble.GetPaymentIntent)
		b.clock.Advance(testRecovery + time.Second)
		done := make(chan error, 1)
		go func() { _, err := first.RecoverDue(context.Background()); done <- err }()
		waitFor(t, "the first instance's read", func() bool { return d.Calls(stripedouble.GetPaymentIntent) > reads })
		b.clock.Advance(time.Minute) // past the first instance's lease
		if n, err := b.svc.RecoverDue(t.Context()); err != nil || n != 1 {
			t.Fatalf("second instance: %d claimed, %v", n, err)
		}
		close(hold)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := b.mustGet(t, p.ID)
		if err := storedChanges["capture"].check(got, d.Ledger(p.ProcessorReference), d.Status(p.ProcessorReference)); err != nil {
			t.Error(err)
		}
		// The request's, recovery's (replayed), the second instance's.
		if keys, calls := d.Keys(stripedouble.CapturePaymentIntent), d.Calls(stripedouble.CapturePaymentIntent); len(keys) != 2 || calls != 3 {
			t.Errorf("keys %q, %d captures sent; want 2 keys, 3 sends", keys, calls)
		}
	})
}

// faultedRefund is a captured card payment (key) whose refund of 4.00
// (key "ref") met fault at Stripe.
func faultedRefund(t *testing.T, b *bundle, d *stripedouble.Double, key string, fault stripedouble.FaultKind) payments.Payment {
	t.Helper()
	p := stripeCard(t, b, key, true)
	d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: fault})
	if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "ref", Amount: new("4")}); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedErrorCapture is an authorized card payment (key) whose capture
// (key "cap") got a 500 that Stripe stores under the key, and, when
// replayed, after one recovery round that met the 500 replayed.
func storedErrorCapture(t *testing.T, b *bundle, d *stripedouble.Double, key string, replayed bool) payments.Payment {
	t.Helper()
	p := stripeCard(t, b, key, false)
	d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
	if _, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "cap"}); err != nil {
		t.Fatal(err)
	}
	if replayed {
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// waitFor polls cond until it holds, or fails after 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A create whose request failed inside Stripe, its 500 stored under the
// key (500_stored), is proved not made by Stripe's list of intents by
// creation time (consistent; here search lags an hour and finds nothing)
// and sent again under one new key; one whose 500 came after the intent
// was made (500_after) is found in that list and settled, never sent
// again. Either way one intent, charged once, and CMPay shows it.
func TestStoredErrorCreateIsSentAgainOnlyWhenListedNowhere(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		for fault, wantKeys := range map[stripedouble.FaultKind]int{stripedouble.ServerErrorStored: 2, stripedouble.ServerErrorAfter: 1} {
			t.Run(fault.String(), func(t *testing.T) {
				before := len(d.Keys(stripedouble.CreatePaymentIntent))
				d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: fault})
				p := b.mustCreate(t, withToken(card("create-"+fault.String()), "pm_card_visa")).Payment
				if p.Status != payments.StatusProcessing {
					t.Fatalf("first answer %s, want PROCESSING", p.Status)
				}
				p = recoverUntilSettled(t, b, p.ID)
				intents := d.IntentsFor(p.ID)
				if len(intents) != 1 || p.Status != payments.StatusCaptured || p.ProcessorReference != intents[0] ||
					d.Status(intents[0]) != "succeeded" {
					t.Fatalf("CMPay %s %s; the double's intents %v", p.Status, p.ProcessorReference, intents)
				}
				if l := d.Ledger(intents[0]); l.Authorizations != 1 || l.Captures != 1 || l.Captured != p.Captured.Minor {
					t.Errorf("ledger %+v, CMPay captured %d; want one authorization, one capture, the same amount", l, p.Captured.Minor)
				}
				if keys := d.Keys(stripedouble.CreatePaymentIntent)[before:]; len(keys) != wantKeys {
					t.Errorf("keys sent %q, want %d", keys, wantKeys)
				}
				if ev := b.events(t, p.ID); len(ev) != 1 || ev["PAYMENT_CREATED"] != 1 {
					t.Errorf("events %v, want one PAYMENT_CREATED", ev)
				}
			})
		}
	})
}

// A create whose key's answer is a stored 500, every instance down for
// two hours after while the account made 150 other payments: the list it
// is looked for in ends a margin after its stored 500 was first seen (no
// send of its key can be dated later), so recovery reads one page of
// Stripe's list, not every payment made since, and sends it again once.
func TestStoredErrorCreateListsOnlyUntilItsStoredError(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("list-window"), "pm_card_visa")).Payment
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil { // the replayed 500
			t.Fatal(err)
		}
		createOthers(t, b, 150, 48*time.Second)
		lists := d.Calls(stripedouble.ListPaymentIntents)
		got := recoverUntilSettled(t, b, p.ID)
		if pages := d.Calls(stripedouble.ListPaymentIntents) - lists; pages != 1 {
			t.Errorf("%d list pages read, want 1 (the payments up to its stored 500)", pages)
		}
		checkCapturedOnce(t, d, got)
	})
}

// A create whose 500 came after its intent was made (500_after), on an
// account whose clock is 20 minutes behind CMPay's (past listMargin):
// the list's window misses the intent, but the create is not sent again
// before search, which matches the payment's id whatever its date, has
// caught up with its key's send; search then finds the intent, and the
// card is charged once.
func TestStoredErrorCreateSkewedPastTheMarginIsFoundBySearch(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, Skew: -20 * time.Minute, DoubleLag: time.Minute})
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		p := b.mustCreate(t, withToken(card("skew-search"), "pm_card_visa")).Payment
		if p.Status != payments.StatusProcessing {
			t.Fatalf("first answer %s, want PROCESSING", p.Status)
		}
		got := recoverUntilSettled(t, b, p.ID)
		intents := d.IntentsFor(p.ID)
		if len(intents) != 1 || got.Status != payments.StatusCaptured || got.ProcessorReference != intents[0] {
			t.Fatalf("CMPay %s %s; the double's intents %v: want one, settled from search", got.Status, got.ProcessorReference, intents)
		}
		if keys := d.Keys(stripedouble.CreatePaymentIntent); len(keys) != 1 {
			t.Errorf("keys %q, want the first alone", keys)
		}
	})
}

// A create whose key's answer is a stored 500, with every instance down
// for a day after: Stripe's list shows no intent, but the create is not
// sent a day late (as for any create past its key's lifetime); nothing is
// charged, and the list, read once, declines it (dayold_test.go).
func TestStoredErrorCreateADayOldIsNotSentAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("a-day-old"), "pm_card_visa")).Payment
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil { // the replayed 500
			t.Fatal(err)
		}
		b.clock.Advance(25 * time.Hour)
		lists := d.Calls(stripedouble.ListPaymentIntents)
		for range 3 {
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if pages := d.Calls(stripedouble.ListPaymentIntents) - lists; pages != 1 {
			t.Errorf("%d list pages read a day later, want the one that declines it", pages)
		}
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusDeclined || got.DeclineCode != payments.DeclineNotCreated ||
			len(d.IntentsFor(p.ID)) != 0 {
			t.Errorf("a day later: %s %q, %d intents; want DECLINED %q, none", got.Status, got.DeclineCode,
				len(d.IntentsFor(p.ID)), payments.DeclineNotCreated)
		}
		// The request's and the first recovery round's, none since.
		if keys, n := d.Keys(stripedouble.CreatePaymentIntent), d.Calls(stripedouble.CreatePaymentIntent); len(keys) != 1 || n != 2 {
			t.Errorf("keys %q, %d creates sent; want one key, 2 sends", keys, n)
		}
	})
}

// Once Stripe replays the stored 500, the processor is answering again:
// the read that resolves it is due at once, not a PROCESSOR_RECOVERY_AFTER
// later, so the next recovery round, with no time passed, settles it.
func TestStoredErrorIsReadAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := storedErrorCapture(t, b, d, "read-at-once", true)
		if n, err := b.svc.RecoverDue(t.Context()); err != nil || n != 1 {
			t.Fatalf("the next round claimed %d, %v; want the operation at once", n, err)
		}
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusCaptured || got.PendingOperation != "" {
			t.Errorf("%s pending %q, want CAPTURED; calls %q", got.Status, got.PendingOperation, b.calls(t, got))
		}
	})
}

// A refund whose key's answer is a stored 500, with every instance down
// for a day after: unlike a create, it is sent again under a new key once
// Stripe's list of the intent's refunds shows none, and refunded once.
func TestStoredErrorRefundADayOldIsSentAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-a-day-old", stripedouble.ServerErrorStored)
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil { // the replayed 500
			t.Fatal(err)
		}
		b.clock.Advance(25 * time.Hour)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		got := b.mustGet(t, p.ID)
		if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
			t.Error(err)
		}
		if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 2 {
			t.Errorf("refund keys %q, want the first and its _a2", keys)
		}
	})
}

// A refund made before its 500 (500_after) while ten newer refunds of the
// intent were made elsewhere (Stripe's dashboard): the list of refunds
// holds it on its second page, so recovery finds it there and settles it,
// never sending it under a new key.
func TestStoredErrorRefundOnALaterPageIsFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-later-page", stripedouble.ServerErrorAfter)
		for i := range 10 {
			if _, err := b.conn.RefundPayment(t.Context(), processor.RefundRequest{IdempotencyKey: fmt.Sprint("dashboard-", i),
				PaymentReference: p.ProcessorReference, AmountMinor: 1, Currency: "BRL"}); err != nil {
				t.Fatal(err)
			}
		}
		lists := d.Calls(stripedouble.ListRefunds)
		got := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		l := d.Ledger(p.ProcessorReference)
		if got.Refunded.Minor != 400 || l.Refunds != 11 || l.Refunded != 410 {
			t.Errorf("CMPay refunded %d; the double %+v; want 400 of 410, in 11 refunds", got.Refunded.Minor, l)
		}
		for _, k := range d.Keys(stripedouble.CreateRefund) {
			if strings.HasSuffix(k, "_a2") {
				t.Errorf("sent again under %s", k)
			}
		}
		if pages := d.Calls(stripedouble.ListRefunds) - lists; pages < 2 {
			t.Errorf("%d list pages read, want the second", pages)
		}
	})
}

// A refund a day old whose key's answer is a stored 500 is sent again
// under _a2, and that send gets no answer that settles it (429, a 500
// before acting, a dropped request). The new key is a day younger than
// the operation: recovery asks again under it, and the refund is made
// once, under _a2.
func TestStoredErrorRefundADayOldIsAskedAgainUnderItsNewKey(t *testing.T) {
	t.Parallel()
	faults := []stripedouble.FaultKind{stripedouble.RateLimit, stripedouble.ServerErrorBefore, stripedouble.DropRequest}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, fault := range faults {
			t.Run(fault.String(), func(t *testing.T) {
				b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
				p := stripeCard(t, b, "refund-new-key-"+fault.String(), true)
				d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
				if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "ref-" + fault.String(),
					Amount: new("4")}); err != nil {
					t.Fatal(err)
				}
				b.clock.Advance(testRecovery + time.Second)
				if _, err := b.svc.RecoverDue(t.Context()); err != nil { // the replayed 500
					t.Fatal(err)
				}
				b.clock.Advance(25 * time.Hour)
				d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: fault})
				if _, err := b.svc.RecoverDue(t.Context()); err != nil { // read: none; _a2 sent, unanswered
					t.Fatal(err)
				}
				got := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
				if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
					t.Error(err)
				}
				if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 2 || keys[1] != keys[0]+"_a2" {
					t.Errorf("refund keys %q, want the first and its _a2", keys)
				}
			})
		}
	})
}

// A refund given _a2 and never sent (the instance died between storing
// the key and sending it) is sent under _a2 by the next recovery, however
// old the operation: the key's age counts from when it was stored.
func TestStoredErrorRefundNewKeyStoredButNotSentIsSent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-key-not-sent", stripedouble.ServerErrorStored)
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil { // the replayed 500
			t.Fatal(err)
		}
		b.clock.Advance(25 * time.Hour)
		// The dying instance stores _a2, then stops before its refund
		// reaches Stripe, and records nothing more.
		dieSendingRefund(t, b, d)
		b.clock.Advance(time.Minute) // past its lease
		got := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
			t.Error(err)
		}
		if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 2 || keys[1] != keys[0]+"_a2" {
			t.Errorf("refund keys %q, want the first and its _a2", keys)
		}
	})
}

// dieSendingRefund runs one recovery round on an instance that dies as it
// sends a refund: its call never returns, so it records nothing of it.
func dieSendingRefund(t *testing.T, b *bundle, d *stripedouble.Double) {
	t.Helper()
	conn := stripeConn(t, d, 5*time.Second).(*stripe.Connector)
	reached := make(chan struct{})
	dying := mustService(t, b.db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, ProcessorTimeout: 5 * time.Second,
		RecoveryAfter: testRecovery, Processor: diesBeforeRefund{conn, reached}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := dying.RecoverDue(ctx); done <- err }()
	<-reached
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the dying instance recorded its send")
	}
}

// diesBeforeRefund is the Stripe connector of an instance that dies just
// before a refund is sent: it says so on reached, then waits for its end.
type diesBeforeRefund struct {
	*stripe.Connector
	reached chan struct{}
}

func (c diesBeforeRefund) RefundPayment(ctx context.Context, _ processor.RefundRequest) (processor.Refund, error) {
	close(c.reached)
	<-ctx.Done()
	return processor.Refund{}, ctx.Err()
}

// A refund whose request Stripe refused before acting (a 500 it does not
// store), and that no instance recovered for a day: its key may be
// forgotten at Stripe, so it is read,
// and Stripe's list of the intent's refunds, which is consistent, shows
// none with its id. It is sent again under a new key, once, and refunded;
// it waited for an operator before.
func TestARefundADayOldFoundNowhereIsSentAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-found-nowhere", stripedouble.ServerErrorBefore)
		b.clock.Advance(25 * time.Hour)
		for range 2 {
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(testRecovery + time.Second)
		}
		got := b.mustGet(t, p.ID)
		if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
			t.Error(err)
		}
		// The first key's request was refused before Stripe kept its key.
		if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 1 || !strings.HasSuffix(keys[0], "_a2") {
			t.Errorf("refund keys Stripe kept %q, want the new one alone", keys)
		}
	})
}

// A day-old refund is sent under a new key only once its old key has
// rested: sent (and refused before Stripe acted) at 22 h 58 min, read at
// 23 h 03 min, it waits, for a request under the old key could still be
// running at Stripe; ten minutes after that send, it is sent again.
func TestARefundADayOldWaitsForItsLastSendToRest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-resting", stripedouble.ServerErrorBefore)
		recoverAt := func(advance time.Duration) payments.Payment {
			t.Helper()
			b.clock.Advance(advance)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
			return b.mustGet(t, p.ID)
		}
		d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		recoverAt(22*time.Hour + 58*time.Minute) // asked again under its key: refused again
		if got := recoverAt(5 * time.Minute); got.Refunded.Minor != 0 || len(d.Keys(stripedouble.CreateRefund)) != 0 {
			t.Fatalf("5 minutes after the last send: refunded %s, keys %q; want it left alone", got.Refunded, d.Keys(stripedouble.CreateRefund))
		}
		got := recoverAt(10 * time.Minute)
		if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
			t.Error(err)
		}
	})
}

// A day-old refund whose last send was cut off before it was recorded (the
// instance died with the request at Stripe) still rests ten minutes from
// that send, which its stamp (last_send_at) gives: a request under the old
// key could still be running at Stripe, and the refund list would not show
// it yet.
func TestARefundADayOldWaitsForAnUnrecordedSendToRest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		p := faultedRefund(t, b, d, "refund-unrecorded-send", stripedouble.ServerErrorBefore)
		b.clock.Advance(22*time.Hour + 58*time.Minute)
		dieSendingRefund(t, b, d)
		b.clock.Advance(5 * time.Minute) // a day old, its last send five minutes ago
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := b.mustGet(t, p.ID); got.Refunded.Minor != 0 || len(d.Keys(stripedouble.CreateRefund)) != 0 {
			t.Fatalf("5 minutes after an unrecorded send: refunded %s, keys %q; want it left alone",
				got.Refunded, d.Keys(stripedouble.CreateRefund))
		}
		b.clock.Advance(10 * time.Minute)
		got := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if err := storedChanges["refund"].check(got, d.Ledger(p.ProcessorReference), ""); err != nil {
			t.Error(err)
		}
	})
}

// A create whose key's answer is a stored 500 is settled within the
// contract's bound for an unknown outcome: PROCESSOR_RECOVERY_AFTER +
// PROCESSOR_TIMEOUT + 5 s after the processor answers again, plus the
// minute the contract gives Stripe's search to show a new intent. Asking
// again under its key only gets the 500 back, so this is the send under a
// new key once search and the list have shown nothing.
func TestStoredErrorCreateSettlesWithinTheContractsBound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true})
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("contract-bound"), "pm_card_visa")).Payment
		if p.Status != payments.StatusProcessing {
			t.Fatalf("first answer %s, want PROCESSING", p.Status)
		}
		start := b.clock.Now()
		bound := testRecovery + testTimeout + 5*time.Second + time.Minute
		for p.Status == payments.StatusProcessing && b.clock.Now().Sub(start) <= bound {
			b.clock.Advance(testRecovery)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
			p = b.mustGet(t, p.ID)
		}
		if p.Status != payments.StatusCaptured {
			calls := b.calls(t, p)
			t.Fatalf("%s after %s, want CAPTURED within %s; %d calls, the last %q", p.Status, b.clock.Now().Sub(start), bound,
				len(calls), calls[max(len(calls)-2, 0):])
		}
		if intents := d.IntentsFor(p.ID); len(intents) != 1 || d.Ledger(intents[0]).Captures != 1 {
			t.Errorf("the double's intents %v, want one, captured once", intents)
		}
	})
}
