package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// lateAfter is how long after an operation's new key (and last send) the
// late check reads it on a bundle of stripeWith's: Stripe's 24 hours, the
// hour of margin, the default search lag.
const lateAfter = 24*time.Hour + time.Hour + processor.DefaultStripeSearchLag

// lateRecheck is how long after its first late check an operation is read
// the second and last time.
const lateRecheck = 24 * time.Hour

// lateDue is when operation op of payment id becomes due for its late
// check: lateAfter past the later of its key's time and its last send.
func lateDue(t *testing.T, b *bundle, id string, op payments.Operation) time.Time {
	t.Helper()
	var row models.ProcessorOperation
	if err := b.db.Gorm.Where("payment_id = ? AND operation = ?", id, string(op)).First(&row).Error; err != nil {
		t.Fatal(err)
	}
	if row.KeySince == nil || row.SettledAt == nil {
		t.Fatalf("operation %s of %s: key since %v, settled %v; want sent again under a new key, settled", op, id,
			row.KeySince, row.SettledAt)
	}
	since := *row.KeySince
	if row.LastSendAt != nil && row.LastSendAt.After(since) {
		since = *row.LastSendAt
	}
	return since.Add(lateAfter)
}

// checkLateAt moves the bundle's clock to at and runs one late check,
// which must not fail; it says how many operations it claimed.
func checkLateAt(t *testing.T, b *bundle, at time.Time) int {
	t.Helper()
	b.clock.Advance(at.Sub(b.clock.Now()))
	n, err := b.svc.CheckLateCompletions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A create whose key's answer is a stored 500 is sent again under _a2 and
// settled on _a2's intent; Stripe then rolls the first request forward,
// charging the payer twice, and no event about it ever arrives. Until the
// first key can no longer be completed, the late check reads nothing and
// finds nothing; once past it, it searches and records the rolled
// forward intent as a duplicate (counted, logged at ERROR), once; a day
// later it searches a second time, which finds it recorded already and
// records, logs and counts nothing more; later rounds read nothing more.
// The payment itself stays as it was.
func TestLateCheckFindsARolledForwardCreateWithoutItsEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		settled, first := resentCreate(t, b, d, "late-create")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		due := lateDue(t, b, settled.ID, payments.OpCreate)
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, due.Add(-time.Second)); n != 0 ||
			d.Calls(stripedouble.SearchPaymentIntents) != searches || len(mustDuplicates(t, b, settled.ID)) != 0 {
			t.Fatalf("a second before the window's end: claimed %d, %d searches, duplicates %+v; want nothing",
				n, d.Calls(stripedouble.SearchPaymentIntents)-searches, mustDuplicates(t, b, settled.ID))
		}
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || d.Calls(stripedouble.SearchPaymentIntents) != searches+1 {
			t.Fatalf("past the window: claimed %d, %d searches; want the create, searched once", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		got := mustDuplicates(t, b, settled.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].Operation != payments.OpCreate ||
			got[0].FoundBy != payments.FoundByLateCheck || got[0].State != "captured" ||
			got[0].Amount != (payments.Money{Minor: 1050, Currency: "BRL"}) {
			t.Errorf("duplicates %+v, want %s, 10.50 BRL captured, found by the late check", got, stray)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 ||
			d.Calls(stripedouble.SearchPaymentIntents) != searches+2 || len(mustDuplicates(t, b, settled.ID)) != 1 {
			t.Errorf("a day later: claimed %d, %d searches in all, duplicates %+v; want it searched a second time, "+
				"nothing more recorded", n, d.Calls(stripedouble.SearchPaymentIntents)-searches,
				mustDuplicates(t, b, settled.ID))
		}
		if n := checkLateAt(t, b, due.Add(96*time.Hour)); n != 0 || d.Calls(stripedouble.SearchPaymentIntents) != searches+2 {
			t.Errorf("a later round: claimed %d, %d searches in all; want none more", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		if n, lines := s.count(payments.OpCreate), s.errorLines(stray); n != 1 || len(lines) != 1 {
			t.Errorf("counted %d, ERROR lines %q; want one of each", n, lines)
		}
		if after := b.mustGet(t, settled.ID); after.Status != settled.Status || after.ProcessorReference != settled.ProcessorReference {
			t.Errorf("the payment changed: %+v, want %+v", after, settled)
		}
	})
}

// The same for a refund: sent again under _a2 after a stored 500, the
// first request rolled forward with no event; the late check reads the
// payment's refunds once past the window and records the second refund,
// reads them a second time a day later, recording nothing twice, and
// never reads them again.
func TestLateCheckFindsARolledForwardRefundWithoutItsEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := faultedRefund(t, b, d, "late-refund", stripedouble.ServerErrorStored)
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		keys := d.Keys(stripedouble.CreateRefund)
		if len(keys) != 2 || settled.Refunded.Minor != 400 {
			t.Fatalf("refunded %d under keys %q; want 400, sent again under _a2", settled.Refunded.Minor, keys)
		}
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		due := lateDue(t, b, p.ID, payments.OpRefund)
		lists := d.Calls(stripedouble.ListRefunds)
		if n := checkLateAt(t, b, due.Add(-time.Second)); n != 0 || d.Calls(stripedouble.ListRefunds) != lists {
			t.Fatalf("a second before the window's end: claimed %d, %d lists; want nothing", n,
				d.Calls(stripedouble.ListRefunds)-lists)
		}
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || d.Calls(stripedouble.ListRefunds) != lists+1 {
			t.Fatalf("past the window: claimed %d, %d lists; want the refund, listed once", n,
				d.Calls(stripedouble.ListRefunds)-lists)
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].Operation != payments.OpRefund || got[0].RefundID == "" ||
			got[0].State != "succeeded" || got[0].Amount != (payments.Money{Minor: 400, Currency: "BRL"}) ||
			got[0].FoundBy != payments.FoundByLateCheck {
			t.Errorf("duplicates %+v, want %s, 4.00 BRL succeeded, found by the late check", got, stray)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 || d.Calls(stripedouble.ListRefunds) != lists+2 ||
			len(mustDuplicates(t, b, p.ID)) != 1 {
			t.Errorf("a day later: claimed %d, %d lists in all, duplicates %+v; want it listed a second time, nothing "+
				"more recorded", n, d.Calls(stripedouble.ListRefunds)-lists, mustDuplicates(t, b, p.ID))
		}
		if n := checkLateAt(t, b, due.Add(96*time.Hour)); n != 0 || d.Calls(stripedouble.ListRefunds) != lists+2 {
			t.Errorf("a later round: claimed %d, %d lists in all; want none more", n, d.Calls(stripedouble.ListRefunds)-lists)
		}
		if n := s.count(payments.OpRefund); n != 1 {
			t.Errorf("counted %d refund duplicates, want 1", n)
		}
		if after := b.mustGet(t, p.ID); after.Refunded != settled.Refunded {
			t.Errorf("refunded %v after the check, want %v", after.Refunded, settled.Refunded)
		}
	})
}

// Operations sent once, each answered at once (a create, a refund): days
// later no round claims or reads either. The sandbox's rounds claim
// nothing. (One sent again whose check found nothing is read once:
// TestLateCheckOfAResentCreateFindsOnlyItsOwn.)
func TestLateCheckReadsNothingNeverResent(t *testing.T) {
	t.Parallel()
	reads := []stripedouble.Endpoint{stripedouble.SearchPaymentIntents, stripedouble.ListPaymentIntents,
		stripedouble.GetPaymentIntent, stripedouble.ListRefunds, stripedouble.GetRefund}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := stripeCard(t, b, "never-resent", true)
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r",
			Amount: new("4")}); err != nil {
			t.Fatal(err)
		}
		before := map[stripedouble.Endpoint]int{}
		for _, ep := range reads {
			before[ep] = d.Calls(ep)
		}
		for _, days := range []time.Duration{2, 4} {
			if n := checkLateAt(t, b, b.clock.Now().Add(days*24*time.Hour)); n != 0 {
				t.Errorf("%d days on: claimed %d, want none", days, n)
			}
		}
		for _, ep := range reads {
			if got := d.Calls(ep) - before[ep]; got != 0 {
				t.Errorf("%s called %d times, want never", ep, got)
			}
		}
		if n := s.count(payments.OpCreate) + s.count(payments.OpRefund); n != 0 {
			t.Errorf("counted %d duplicates, want none", n)
		}
		sandbox := setup(t, db)
		sandbox.mustCreate(t, card("sandbox"))
		if n := checkLateAt(t, sandbox, sandbox.clock.Now().Add(72*time.Hour)); n != 0 {
			t.Errorf("the sandbox's round claimed %d, want none", n)
		}
	})
}

// A late check whose read fails keeps its claim: another round, here or
// on any instance, reads nothing until the claim runs out (ten minutes),
// and then reads it again and records the duplicate.
func TestLateCheckClaimHoldsAfterAFailedRead(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, _ := dupBundle(t, db)
		p, first := resentCreate(t, b, d, "late-claim")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		due := lateDue(t, b, p.ID, payments.OpCreate)
		d.FailNext(stripedouble.SearchPaymentIntents, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		b.clock.Advance(due.Add(time.Second).Sub(b.clock.Now()))
		if n, err := b.svc.CheckLateCompletions(t.Context()); n != 1 || err == nil {
			t.Fatalf("the failed read: claimed %d, %v; want the create claimed, an error", n, err)
		}
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, due.Add(9*time.Minute)); n != 0 || d.Calls(stripedouble.SearchPaymentIntents) != searches {
			t.Fatalf("inside the claim: claimed %d, %d searches; want none", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		if n := checkLateAt(t, b, due.Add(11*time.Minute)); n != 1 {
			t.Fatalf("past the claim: claimed %d, want the create again", n)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 1 || got[0].Reference != stray {
			t.Errorf("duplicates %+v, want %s", got, stray)
		}
	})
}

// The Recoverer, which runs on every instance, makes the late check by
// itself: a rolled forward create with no event is recorded once due.
func TestRecovererChecksResentOperationsLate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, first := resentCreate(t, b, d, "late-recoverer")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(lateDue(t, b, p.ID, payments.OpCreate).Add(time.Second).Sub(b.clock.Now()))
		r := b.svc.Recoverer(10*time.Millisecond, nil)
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		waitFor(t, "the rolled forward create recorded", func() bool { return s.count(payments.OpCreate) == 1 })
		if got := mustDuplicates(t, b, p.ID); len(got) != 1 || got[0].Reference != stray {
			t.Errorf("duplicates %+v, want %s", got, stray)
		}
	})
}
