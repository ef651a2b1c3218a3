package payments_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// A Pix payment whose create got a stored 500 is sent again under _a2 and
// waits for its payer on _a2's intent; Stripe then rolls the first request
// forward into a second Pix intent, also waiting for its payer, whose code
// nobody was shown but which a payer could still pay. The late check
// records it (state pending, counted, an ERROR line saying it waits for
// its payer, not that money moved twice) and cancels it at Stripe, under
// a key of its own, so that it can no longer be paid; the payment and its
// own intent are left as they were (the cancel's event, applied, changes
// nothing), and the second read cancels nothing more.
func TestLateCheckRecordsAndCancelsAWaitingPixIntent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, pix("late-pix")).Payment
		settled := recoverUntilSettled(t, b, p.ID)
		keys := d.Keys(stripedouble.CreatePaymentIntent)
		if settled.Status != payments.StatusPending || len(keys) != 2 || keys[1] != keys[0]+"_a2" {
			t.Fatalf("settled %s under keys %q; want PENDING, sent again under _a2", settled.Status, keys)
		}
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Status(stray); got != "requires_action" {
			t.Fatalf("the rolled forward intent is %s, want waiting for its payer", got)
		}
		cancels := d.Calls(stripedouble.CancelPaymentIntent)
		due := lateDue(t, b, p.ID, payments.OpCreate)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the create", n)
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].State != "pending" || got[0].FoundBy != payments.FoundByLateCheck {
			t.Errorf("duplicates %+v, want %s pending, found by the late check", got, stray)
		}
		lines := s.errorLines(stray)
		if s.count(payments.OpCreate) != 1 || len(lines) != 1 || !strings.Contains(lines[0], "waiting for its payer") ||
			strings.Contains(lines[0], "money moved twice") {
			t.Errorf("counted %d, ERROR lines %q; want one saying it waits for its payer", s.count(payments.OpCreate), lines)
		}
		if st := d.Status(stray); st != "canceled" || d.Calls(stripedouble.CancelPaymentIntent) != cancels+1 {
			t.Errorf("the second intent %s after %d cancels; want canceled, once", st,
				d.Calls(stripedouble.CancelPaymentIntent)-cancels)
		}
		if err := d.Pay(stray); err == nil {
			t.Error("the payer paid the canceled second intent")
		}
		if st := d.Status(settled.ProcessorReference); st != "requires_action" {
			t.Errorf("the payment's own intent is %s, want still waiting for its payer", st)
		}
		if n := applyEventsOf(t, b, d, stray, "payment_intent.canceled"); n != 1 {
			t.Errorf("%d payment_intent.canceled events about %s, want the cancel's", n, stray)
		}
		if after := b.mustGet(t, p.ID); after.Status != payments.StatusPending || after.ProcessorReference != settled.ProcessorReference {
			t.Errorf("the payment changed: %s %s, want PENDING on %s", after.Status, after.ProcessorReference,
				settled.ProcessorReference)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 ||
			d.Calls(stripedouble.CancelPaymentIntent) != cancels+1 || len(mustDuplicates(t, b, p.ID)) != 1 {
			t.Errorf("the second read: claimed %d, %d cancels, duplicates %+v; want it read, nothing more",
				n, d.Calls(stripedouble.CancelPaymentIntent)-cancels, mustDuplicates(t, b, p.ID))
		}
	})
}

// A recovery read that finds two Pix intents for one create, both waiting
// for their payer (_a2's first send made one and got a 500; Stripe rolled
// the first key's request forward into the other), settles the payment on
// one and records the other, canceling it at Stripe so that its payer
// cannot pay it.
func TestRecoveryCancelsASecondWaitingPixIntent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		// The create's third POST is _a2's first send (the second replays
		// the first key's 500): made at Stripe, answered with a 500.
		d.FailNth(stripedouble.CreatePaymentIntent, 3, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		p := b.mustCreate(t, pix("recovery-pix")).Payment
		for range 100 {
			if len(d.Keys(stripedouble.CreatePaymentIntent)) == 2 {
				break
			}
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		keys := d.Keys(stripedouble.CreatePaymentIntent)
		if len(keys) != 2 || b.mustGet(t, p.ID).Status != payments.StatusProcessing {
			t.Fatalf("keys %q, status %s; want _a2 sent, the payment PROCESSING", keys, b.mustGet(t, p.ID).Status)
		}
		if _, err := d.RollForward(keys[0]); err != nil {
			t.Fatal(err)
		}
		settled := recoverUntilSettled(t, b, p.ID)
		got := mustDuplicates(t, b, p.ID)
		if settled.Status != payments.StatusPending || len(got) != 1 || got[0].Reference == settled.ProcessorReference ||
			got[0].State != "pending" || got[0].FoundBy != payments.FoundByRecovery || s.count(payments.OpCreate) != 1 {
			t.Fatalf("settled %s on %s, duplicates %+v, counted %d; want PENDING, the other intent recorded once",
				settled.Status, settled.ProcessorReference, got, s.count(payments.OpCreate))
		}
		if st := d.Status(got[0].Reference); st != "canceled" {
			t.Errorf("the second intent is %s, want canceled", st)
		}
		if st := d.Status(settled.ProcessorReference); st != "requires_action" {
			t.Errorf("the payment's own intent is %s, want still waiting for its payer", st)
		}
	})
}

// A second Pix intent recorded waiting for its payer, whose cancel fails
// and which its payer then pays before the cancel is tried again, is money
// moved twice: the late check's next read finds it paid and logs an ERROR
// line saying so. The record, written once, keeps the state it was found
// in; it is counted once.
func TestLateCheckLogsAWaitingDuplicatePaidBeforeItsCancel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, pix("late-pix-paid")).Payment
		recoverUntilSettled(t, b, p.ID)
		stray, err := d.RollForward(d.Keys(stripedouble.CreatePaymentIntent)[0])
		if err != nil {
			t.Fatal(err)
		}
		d.FailNext(stripedouble.CancelPaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		due := lateDue(t, b, p.ID, payments.OpCreate)
		b.clock.Advance(due.Add(time.Second).Sub(b.clock.Now()))
		if n, err := b.svc.CheckLateCompletions(t.Context()); n != 1 || err == nil {
			t.Fatalf("the first read: claimed %d, error %v; want the create claimed, its cancel failed", n, err)
		}
		if err := d.Pay(stray); err != nil {
			t.Fatal(err)
		}
		if n := checkLateAt(t, b, due.Add(time.Hour)); n != 1 {
			t.Fatalf("past the claim: claimed %d, want the create read again", n)
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].State != "pending" {
			t.Errorf("duplicates %+v, want %s recorded pending", got, stray)
		}
		lines := s.errorLines(stray)
		if s.count(payments.OpCreate) != 1 || len(lines) != 2 || !strings.Contains(lines[1], "money moved twice") {
			t.Errorf("counted %d, ERROR lines %q; want counted once, the last saying money moved twice",
				s.count(payments.OpCreate), lines)
		}
	})
}
