package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// Stripe's search lags longer than STRIPE_SEARCH_LAG at the moment of the
// first late check (an outage of its search): the intent the first key's
// request made at the window's end is missing from it, and the first read
// finds nothing. The second read, a day later, finds it and records it,
// once; no round reads the create a third time, and its row has left the
// partial index of the checks to come.
func TestLateCheckReadsASecondTimeForWhatSearchShowedLate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, first := resentCreate(t, b, d, "late-twice")
		due := lateDue(t, b, p.ID, payments.OpCreate)
		b.clock.Advance(due.Add(-time.Minute).Sub(b.clock.Now()))
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		d.SetSearchLag(2 * time.Hour)
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || len(mustDuplicates(t, b, p.ID)) != 0 {
			t.Fatalf("the first read: claimed %d, duplicates %+v; want the create read, the intent not yet in search",
				n, mustDuplicates(t, b, p.ID))
		}
		if n := checkLateAt(t, b, due.Add(lateRecheck-time.Minute)); n != 0 {
			t.Fatalf("before a day has passed: claimed %d, want none", n)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 ||
			d.Calls(stripedouble.SearchPaymentIntents) != searches+2 {
			t.Fatalf("a day after the first read: claimed %d, %d searches; want the create, searched a second time",
				n, d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || got[0].FoundBy != payments.FoundByLateCheck {
			t.Errorf("duplicates %+v, want %s found by the late check", got, stray)
		}
		if n, lines := s.count(payments.OpCreate), s.errorLines(stray); n != 1 || len(lines) != 1 {
			t.Errorf("counted %d, ERROR lines %q; want one of each", n, lines)
		}
		if n := checkLateAt(t, b, due.Add(10*lateRecheck)); n != 0 || d.Calls(stripedouble.SearchPaymentIntents) != searches+2 {
			t.Errorf("days later: claimed %d, %d searches in all; want none more", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		var left int64
		if err := b.db.Gorm.Model(&models.ProcessorOperation{}).Where("payment_id = ? AND key_since IS NOT NULL AND "+
			"late_rechecked_at IS NULL AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')", p.ID).
			Count(&left).Error; err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Errorf("%d of its operations still in the partial index's rows, want none", left)
		}
	})
}

// A refund sent again under a new key always has a payment with a
// processor reference (its resend read that reference's refunds). One
// whose payment lost it (a row changed by hand) is an error for the late
// check, never stamped read: no list is read, and the check is made once
// the reference is back.
func TestLateCheckOfARefundWithoutItsPaymentsReferenceFails(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, _ := dupBundle(t, db)
		p := faultedRefund(t, b, d, "late-no-reference", stripedouble.ServerErrorStored)
		recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		due := lateDue(t, b, p.ID, payments.OpRefund)
		if err := b.db.Gorm.Exec("UPDATE payments SET processor_reference = NULL WHERE id = ?", p.ID).Error; err != nil {
			t.Fatal(err)
		}
		lists := d.Calls(stripedouble.ListRefunds)
		b.clock.Advance(due.Add(time.Second).Sub(b.clock.Now()))
		if n, err := b.svc.CheckLateCompletions(t.Context()); n != 1 || err == nil {
			t.Fatalf("claimed %d, %v; want the refund claimed, an error", n, err)
		}
		var row models.ProcessorOperation
		if err := b.db.Gorm.Where("payment_id = ? AND operation = ?", p.ID, string(payments.OpRefund)).First(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.LateCheckedAt != nil || d.Calls(stripedouble.ListRefunds) != lists {
			t.Errorf("late checked at %v, %d lists; want no stamp and no read", row.LateCheckedAt,
				d.Calls(stripedouble.ListRefunds)-lists)
		}
		if err := b.db.Gorm.Exec("UPDATE payments SET processor_reference = ? WHERE id = ?", p.ProcessorReference,
			p.ID).Error; err != nil {
			t.Fatal(err)
		}
		if n := checkLateAt(t, b, due.Add(11*time.Minute)); n != 1 || d.Calls(stripedouble.ListRefunds) != lists+1 {
			t.Errorf("with its reference back, past the claim: claimed %d, %d lists; want it read", n,
				d.Calls(stripedouble.ListRefunds)-lists)
		}
	})
}
