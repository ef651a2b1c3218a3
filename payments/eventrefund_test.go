package payments_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// failedRefundMadeLate refunds 4.00 of a 10.50 Stripe payment whose first
// request gets a stored 500 while 7.00 is refunded in Stripe's dashboard:
// its _a2 is refused, the list read again holds none with its id, and it
// is FAILED. Then the dashboard's refund fails (pending: is settled
// failed) and Stripe completes the first request, making the very refund
// CMPay shows FAILED. It answers the payment, CMPay's refund, Stripe's
// refund made, and how many events the double held about the payment's
// intent before Stripe made it.
func failedRefundMadeLate(t *testing.T, b *bundle, d *stripedouble.Double, key string, pending bool) (
	payments.Payment, payments.Refund, string, int) {
	t.Helper()
	p := stripeCard(t, b, key, true)
	d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
	res, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r", Amount: new("4")})
	if err != nil {
		t.Fatal(err)
	}
	dashboard, err := b.conn.RefundPayment(t.Context(), processor.RefundRequest{IdempotencyKey: "dashboard",
		PaymentReference: p.ProcessorReference, AmountMinor: 700, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
	if r := refundOf(t, b, p.ID, res.Refund.ID); r.Status != payments.RefundFailed {
		t.Fatalf("refund %+v; want it FAILED", r)
	}
	if pending {
		err = d.SettleRefund(dashboard.Reference, false, "expired_or_canceled_card")
	} else {
		err = d.FailRefund(dashboard.Reference, "expired_or_canceled_card")
	}
	if err != nil {
		t.Fatal(err)
	}
	before := len(d.EventsFor(p.ProcessorReference))
	made, err := d.RollForward(d.Keys(stripedouble.CreateRefund)[0])
	if err != nil {
		t.Fatal(err)
	}
	return p, *res.Refund, made, before
}

// reserveForRefunds sets, by hand, how much of payment id's captured
// amount is reserved for refunds in flight: 1050 of a 10.50 payment leaves
// nothing a refund could be counted from, 0 frees it again.
func reserveForRefunds(t *testing.T, b *bundle, id string, minor int) {
	t.Helper()
	if err := b.db.Gorm.Exec("UPDATE payments SET reserved_minor = ? WHERE id = ?", minor, id).Error; err != nil {
		t.Fatal(err)
	}
}

// applyEventsFrom applies the double's events about intent ref from the
// from-th on, of type typ ("": every type), through Stripe's decoder; it
// says how many.
func applyEventsFrom(t *testing.T, b *bundle, d *stripedouble.Double, ref string, from int, typ string) int {
	t.Helper()
	n := 0
	for _, e := range d.EventsFor(ref)[from:] {
		if typ != "" && e.Type != typ {
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

// wantFailedRefundSettled checks refund id of payment id settled SUCCEEDED
// on Stripe's refund made: 4.00 counted refunded once, PAYMENT_REFUNDED
// once after its PAYMENT_REFUND_FAILED.
func wantFailedRefundSettled(t *testing.T, b *bundle, id, refundID, made string) {
	t.Helper()
	got := b.mustGet(t, id)
	if r := refundOf(t, b, id, refundID); r.Status != payments.RefundSucceeded || r.FailureCode != "" ||
		got.Refunded.Minor != 400 || got.Status != payments.StatusPartiallyRefunded || got.Reserved.Minor != 0 {
		t.Errorf("refund %+v, payment %s refunded %d reserved %d; want the refund SUCCEEDED, 4.00 refunded",
			r, got.Status, got.Refunded.Minor, got.Reserved.Minor)
	}
	if ref := refundReference(t, b, id); ref != made {
		t.Errorf("the refund's reference %q, want Stripe's %s", ref, made)
	}
	if ev := b.events(t, id); ev["PAYMENT_REFUNDED"] != 1 || ev["PAYMENT_REFUND_FAILED"] != 1 {
		t.Errorf("events %v, want PAYMENT_REFUND_FAILED then one PAYMENT_REFUNDED", ev)
	}
}

// Stripe's event about the refund it made of one CMPay FAILED settles it
// SUCCEEDED right away, as the late check would a day later: on Stripe's
// refund, read from Stripe as a READ of its operation, its amount counted,
// PAYMENT_REFUNDED. The same event again reads nothing and changes
// nothing; the late check afterwards, both its reads, finds the refund's
// own and records no duplicate.
func TestEventSettlesAFailedRefundTheProcessorMade(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, refund, made, before := failedRefundMadeLate(t, b, d, "event-failed-made", false)
		if n := applyEventsFrom(t, b, d, p.ProcessorReference, before, ""); n == 0 {
			t.Fatal("Stripe sent no event about the refund it made")
		}
		wantFailedRefundSettled(t, b, p.ID, refund.ID, made)
		calls := refundCalls(t, b, b.mustGet(t, p.ID))
		if calls[len(calls)-1] != "READ a2 SUCCEEDED " {
			t.Errorf("refund calls %q, want the event's read last", calls)
		}

		reads := d.Calls(stripedouble.GetRefund)
		applyEventsFrom(t, b, d, p.ProcessorReference, before, "")
		wantFailedRefundSettled(t, b, p.ID, refund.ID, made)
		if again := refundCalls(t, b, b.mustGet(t, p.ID)); !slices.Equal(again, calls) ||
			d.Calls(stripedouble.GetRefund) != reads {
			t.Errorf("the event again: refund calls %q, %d reads; want %q, none", again,
				d.Calls(stripedouble.GetRefund)-reads, calls)
		}

		due := lateDue(t, b, p.ID, payments.OpRefund)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 {
			t.Fatalf("a day later: claimed %d, want the second read", n)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpRefund) != 0 || len(s.errorLines(made)) != 0 {
			t.Errorf("duplicates %+v, counted %d, ERROR lines %q; want none: it is the refund's own",
				dups, s.count(payments.OpRefund), s.errorLines(made))
		}
		wantFailedRefundSettled(t, b, p.ID, refund.ID, made)
	})
}

// The same with Stripe's refunds pending: an event about the refund
// Stripe made, while it is pending there, leaves the refund FAILED and
// records nothing, even when the event's body says it succeeded (the
// record read from Stripe decides). Stripe's refund.updated once it
// succeeds settles it SUCCEEDED.
func TestEventLeavesAFailedRefundStripeHasPendingFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, RefundsPending: true})
		p, refund, made, before := failedRefundMadeLate(t, b, d, "event-failed-pending", true)
		reads := d.Calls(stripedouble.GetRefund)
		for _, state := range []processor.RefundState{processor.RefundPending, processor.RefundSucceeded} {
			ev := processor.Event{ID: "evt_" + string(state), Type: "refund.created", PaymentReference: p.ProcessorReference,
				Refund: &processor.Refund{Reference: made, PaymentReference: p.ProcessorReference, RefundID: refund.ID,
					State: state, AmountMinor: 400, Currency: "BRL"}}
			if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		got := b.mustGet(t, p.ID)
		if r := refundOf(t, b, p.ID, refund.ID); r.Status != payments.RefundFailed || got.Refunded.Minor != 0 ||
			b.events(t, p.ID)["PAYMENT_REFUNDED"] != 0 || len(mustDuplicates(t, b, p.ID)) != 0 {
			t.Errorf("refund %+v, refunded %d, events %v, duplicates %+v; want it FAILED while Stripe's is pending",
				r, got.Refunded.Minor, b.events(t, p.ID), mustDuplicates(t, b, p.ID))
		}
		if n := d.Calls(stripedouble.GetRefund) - reads; n != 2 {
			t.Errorf("%d reads of Stripe's refund, want one for each event", n)
		}

		if err := d.SettleRefund(made, true, ""); err != nil {
			t.Fatal(err)
		}
		if n := applyEventsFrom(t, b, d, p.ProcessorReference, before, "refund.updated"); n != 1 {
			t.Fatalf("applied %d refund.updated events, want Stripe's one", n)
		}
		wantFailedRefundSettled(t, b, p.ID, refund.ID, made)
	})
}

// The same refund Stripe made of one CMPay FAILED, but when its event
// comes the payment cannot count it (the rest of its captured amount held
// for a refund in flight, set by hand): the event leaves it FAILED and
// records nothing, and the late check, the hold gone, settles it.
func TestEventLeavesAFailedRefundThePaymentCannotCountToTheLateCheck(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, refund, made, before := failedRefundMadeLate(t, b, d, "event-failed-held", false)
		reserveForRefunds(t, b, p.ID, 1050)
		applyEventsFrom(t, b, d, p.ProcessorReference, before, "")
		if r := refundOf(t, b, p.ID, refund.ID); r.Status != payments.RefundFailed || refundReference(t, b, p.ID) != "" ||
			b.events(t, p.ID)["PAYMENT_REFUNDED"] != 0 || len(mustDuplicates(t, b, p.ID)) != 0 {
			t.Errorf("refund %+v, events %v, duplicates %+v; want it FAILED, nothing recorded", r, b.events(t, p.ID),
				mustDuplicates(t, b, p.ID))
		}
		reserveForRefunds(t, b, p.ID, 0)
		if n := checkLateAt(t, b, lateDue(t, b, p.ID, payments.OpRefund).Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		wantFailedRefundSettled(t, b, p.ID, refund.ID, made)
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 0 || s.count(payments.OpRefund) != 0 {
			t.Errorf("duplicates %+v, counted %d; want none: it is the refund's own", dups, s.count(payments.OpRefund))
		}
	})
}

// The same refund Stripe made of one CMPay FAILED, which the payment
// cannot count at the late check's last read either: that read records it
// as the refund's only one made, CMPay's FAILED (the admin says the payer
// got it once). An event afterwards, the hold gone, must not settle the
// refund on it: the admin would then call the record a second refund, the
// payer refunded twice, and tell the merchant to settle it with the payer.
// Nor read Stripe's refund: the record is final, and every later event
// about the payment (charge.refunded lists all its refunds) would.
func TestEventLeavesAFailedRefundTheLastLateReadRecorded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, refund, made, before := failedRefundMadeLate(t, b, d, "event-failed-recorded", false)
		reserveForRefunds(t, b, p.ID, 1050)
		due := lateDue(t, b, p.ID, payments.OpRefund)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 {
			t.Fatalf("a day later: claimed %d, want the second read", n)
		}
		if dups := mustDuplicates(t, b, p.ID); len(dups) != 1 || dups[0].Reference != made || s.count(payments.OpRefund) != 1 {
			t.Fatalf("duplicates %+v; want Stripe's refund %s recorded by the last read", dups, made)
		}
		reserveForRefunds(t, b, p.ID, 0)
		reads := d.Calls(stripedouble.GetRefund)
		applyEventsFrom(t, b, d, p.ProcessorReference, before, "")
		got := b.mustGet(t, p.ID)
		if r := refundOf(t, b, p.ID, refund.ID); r.Status != payments.RefundFailed || refundReference(t, b, p.ID) != "" ||
			got.Refunded.Minor != 0 || b.events(t, p.ID)["PAYMENT_REFUNDED"] != 0 {
			t.Errorf("refund %+v, refunded %d, events %v; want it FAILED as the last read recorded it",
				r, got.Refunded.Minor, b.events(t, p.ID))
		}
		// Nothing an event says can change it now: it costs no read.
		if n := d.Calls(stripedouble.GetRefund) - reads; n != 0 {
			t.Errorf("%d reads of Stripe's refund recorded already, want none", n)
		}
	})
}
