package payments_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// A refund of 4.00 of 10.50 whose first request got a stored 500, while
// 7.00 was refunded in Stripe's dashboard: its _a2 is refused (3.50 left),
// the list read again holds none with its id, and it is FAILED. Then the
// dashboard's refund fails and Stripe completes the first request: Stripe
// made the very refund CMPay shows FAILED. The late check settles it
// SUCCEEDED on Stripe's refund (its amount counted, PAYMENT_REFUNDED, a
// READ of its operation) and records no duplicate: it is not a second
// refund. The second read finds nothing more.
func TestLateCheckSettlesAFailedRefundTheProcessorMade(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, refund, made, _ := failedRefundMadeLate(t, b, d, "late-failed-made", false)
		if r := refundOf(t, b, p.ID, refund.ID); r.FailureCode != "amount_too_large" {
			t.Fatalf("refund %+v; want it FAILED amount_too_large", r)
		}
		due := lateDue(t, b, p.ID, payments.OpRefund)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		got := b.mustGet(t, p.ID)
		refunds, err := b.svc.RefundsOf(t.Context(), []payments.Payment{got})
		if err != nil {
			t.Fatal(err)
		}
		if r := refunds[0]; len(r) != 1 || r[0].Status != payments.RefundSucceeded || r[0].FailureCode != "" ||
			got.Refunded.Minor != 400 || got.Status != payments.StatusPartiallyRefunded || got.Reserved.Minor != 0 {
			t.Errorf("refunds %+v, payment %s refunded %d reserved %d; want the refund SUCCEEDED, 4.00 refunded",
				r, got.Status, got.Refunded.Minor, got.Reserved.Minor)
		}
		if ref := refundReference(t, b, p.ID); ref != made {
			t.Errorf("the refund's reference %q, want Stripe's %s", ref, made)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUNDED"] != 1 || ev["PAYMENT_REFUND_FAILED"] != 1 {
			t.Errorf("events %v, want PAYMENT_REFUND_FAILED then PAYMENT_REFUNDED", ev)
		}
		if calls := refundCalls(t, b, got); calls[len(calls)-1] != "READ a2 SUCCEEDED " {
			t.Errorf("refund calls %q, want the late check's read last", calls)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 {
			t.Errorf("a day later: claimed %d, want the second read", n)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpRefund) != 0 || len(s.errorLines(made)) != 0 {
			t.Errorf("duplicates %+v, counted %d, ERROR lines %q; want none: it is the refund's own",
				dups, s.count(payments.OpRefund), s.errorLines(made))
		}
		if after := b.mustGet(t, p.ID); after.Refunded.Minor != 400 {
			t.Errorf("refunded %d after the second read, want 400 counted once", after.Refunded.Minor)
		}
	})
}

// The same, with Stripe's refunds pending: the refund Stripe made of the
// one CMPay FAILED is still pending at the late check's first read, which
// settles and records nothing (it may yet succeed, and be settled on); at
// the second and last read, still pending, it is recorded, counted, and
// logged at ERROR as what it is, a refund CMPay marked FAILED, not money
// moved twice.
func TestLateCheckRecordsAPendingRefundOfAFailedOneAtItsLastRead(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := &seen{counts: map[payments.Operation]int{}}
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, RefundsPending: true, OnDuplicate: s.onDuplicate,
			Logger: slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		p, _, made, _ := failedRefundMadeLate(t, b, d, "late-failed-pending", true)
		due := lateDue(t, b, p.ID, payments.OpRefund)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || len(mustDuplicates(t, b, p.ID)) != 0 {
			t.Fatalf("the first read: claimed %d, duplicates %+v; want it read, nothing recorded", n,
				mustDuplicates(t, b, p.ID))
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 {
			t.Fatalf("the second read: claimed %d, want the refund", n)
		}
		got := b.mustGet(t, p.ID)
		dups := mustDuplicates(t, b, p.ID)
		if len(dups) != 1 || dups[0].Reference != made || dups[0].State != "pending" || s.count(payments.OpRefund) != 1 {
			t.Errorf("duplicates %+v, counted %d; want %s pending, once", dups, s.count(payments.OpRefund), made)
		}
		lines := s.errorLines(made)
		if len(lines) != 1 || !strings.Contains(lines[0], "the processor made a refund CMPay marked FAILED") ||
			strings.Contains(lines[0], "money moved twice") {
			t.Errorf("ERROR lines %q; want one saying the processor made a refund CMPay marked FAILED", lines)
		}
		if got.Refunded.Minor != 0 {
			t.Errorf("refunded %d, want 0: the refund stays FAILED while Stripe's is pending", got.Refunded.Minor)
		}
	})
}

// The same refund Stripe made of the one CMPay FAILED, but at the first
// late read the payment cannot count it (the rest of its captured amount
// held for a refund in flight, set by hand): nothing is recorded then. At
// the second read, the hold gone, it is settled SUCCEEDED on Stripe's
// refund, and no duplicate names it: a record written at the first read,
// which can never be removed, would have shown the refund's own as a
// second one, money moved twice.
func TestLateCheckSettlesAFailedRefundCountableOnlyAtItsSecondRead(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, _, made, _ := failedRefundMadeLate(t, b, d, "late-failed-later", false)
		reserveForRefunds(t, b, p.ID, 1050)
		due := lateDue(t, b, p.ID, payments.OpRefund)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 {
			t.Errorf("after the first read, duplicates %+v; want none recorded before the last read", dups)
		}
		reserveForRefunds(t, b, p.ID, 0)
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 {
			t.Fatalf("a day later: claimed %d, want the second read", n)
		}
		got := b.mustGet(t, p.ID)
		if ref := refundReference(t, b, p.ID); ref != made || got.Refunded.Minor != 400 {
			t.Errorf("the refund's reference %q, refunded %d; want Stripe's %s, 4.00", ref, got.Refunded.Minor, made)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpRefund) != 0 {
			t.Errorf("duplicates %+v, counted %d; want none: it is the refund's own", dups, s.count(payments.OpRefund))
		}
	})
}
