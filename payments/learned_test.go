package payments_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// applyEvents decodes the double's events about intent ref and applies
// each, every one copies times.
func applyEvents(t *testing.T, b *bundle, d *stripedouble.Double, ref string, copies int) {
	t.Helper()
	for _, e := range d.EventsFor(ref) {
		ev, err := stripe.DecodeEvent(e.Body)
		if err != nil {
			t.Fatal(err)
		}
		for range copies {
			if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
				t.Fatalf("apply %s: %v", ev.Type, err)
			}
		}
	}
}

// stripeRefundOf refunds amount of payment id through Stripe and returns
// the refund and its id at the double.
func stripeRefundOf(t *testing.T, b *bundle, d *stripedouble.Double, id, key, amount string) (*payments.Refund, string) {
	t.Helper()
	res := must(t)(b.refund(t, id, key, &amount))
	if res.Refund == nil || res.Refund.Status != payments.RefundSucceeded {
		t.Fatalf("refund %s: %+v", key, res.Refund)
	}
	refs := d.RefundsFor(res.Refund.ID)
	if len(refs) != 1 {
		t.Fatalf("refund %s at the double: %v", key, refs)
	}
	return res.Refund, refs[0]
}

// refundOf is payment id's refund refundID as CMPay shows it.
func refundOf(t *testing.T, b *bundle, id, refundID string) payments.Refund {
	t.Helper()
	got, err := b.svc.RefundsOf(t.Context(), []payments.Payment{b.mustGet(t, id)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got[0] {
		if r.ID == refundID {
			return r
		}
	}
	t.Fatalf("no refund %s on %s", refundID, id)
	return payments.Refund{}
}

// A refund Stripe fails after it succeeded (the payer's bank returns it)
// becomes FAILED with Stripe's code once its events come, each twice: the
// payment's refunded amount and status follow Stripe's, each returned
// refund writes one PAYMENT_REFUND_FAILED carrying it, the read shows
// under the refund's operation, and the amount can be refunded again.
func TestRefundReturnedAfterSucceedingIsFailed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "returned", true)
		first, firstAt := stripeRefundOf(t, b, d, p.ID, "ref-1", "4.00")
		second, secondAt := stripeRefundOf(t, b, d, p.ID, "ref-2", "6.50")
		wantState(t, b.mustGet(t, p.ID), payments.StatusRefunded, "10.50", "10.50")

		if err := d.FailRefund(secondAt, "expired_or_canceled_card"); err != nil {
			t.Fatal(err)
		}
		applyEvents(t, b, d, p.ProcessorReference, 2)
		got := b.mustGet(t, p.ID)
		wantState(t, got, payments.StatusPartiallyRefunded, "10.50", "4.00")
		if l := d.Ledger(p.ProcessorReference); got.Refunded.Minor != l.Refunded {
			t.Errorf("CMPay refunded %s, Stripe %d", got.Refunded, l.Refunded)
		}
		if r := refundOf(t, b, p.ID, second.ID); r.Status != payments.RefundFailed || r.FailureCode != "expired_or_canceled_card" ||
			r.ReturnedAt.IsZero() || r.ReturnedAt.After(b.clock.Now()) {
			t.Errorf("the returned refund: %s %q returned at %v", r.Status, r.FailureCode, r.ReturnedAt)
		}
		if r := refundOf(t, b, p.ID, first.ID); r.Status != payments.RefundSucceeded || !r.ReturnedAt.IsZero() {
			t.Errorf("the other refund: %s returned at %v", r.Status, r.ReturnedAt)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUND_FAILED"] != 1 || ev["PAYMENT_REFUNDED"] != 2 {
			t.Errorf("events: %v", ev)
		}
		if calls := b.calls(t, got); !slices.Contains(calls, "REFUND_PAYMENT DECLINED expired_or_canceled_card") {
			t.Errorf("the read is not listed: %q", calls)
		}

		if err := d.FailRefund(firstAt, "account_closed"); err != nil {
			t.Fatal(err)
		}
		applyEvents(t, b, d, p.ProcessorReference, 1)
		wantState(t, b.mustGet(t, p.ID), payments.StatusCaptured, "10.50", "0.00")
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUND_FAILED"] != 2 {
			t.Errorf("events after both returned: %v", ev)
		}
		// What Stripe gave back can be refunded again, and is at Stripe.
		stripeRefundOf(t, b, d, p.ID, "ref-3", "10.50")
		wantState(t, b.mustGet(t, p.ID), payments.StatusRefunded, "10.50", "10.50")
		if l := d.Ledger(p.ProcessorReference); l.Refunded != 1050 {
			t.Errorf("Stripe refunded %d, want 1050", l.Refunded)
		}
	})
}

// The events of one returned refund applied at once from several
// goroutines (two instances, a retry), beside recovery and the poller,
// fail it once: one PAYMENT_REFUND_FAILED, the amount taken off once.
func TestRefundReturnedIsFailedOnceUnderRaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "returned-race", true)
		_, at := stripeRefundOf(t, b, d, p.ID, "ref-1", "10.50")
		if err := d.FailRefund(at, "expired_or_canceled_card"); err != nil {
			t.Fatal(err)
		}
		var evs []processor.Event
		for _, e := range d.EventsFor(p.ProcessorReference) {
			ev, err := stripe.DecodeEvent(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(evs)+2)
		for range 4 {
			for _, ev := range evs {
				wg.Go(func() { errs <- b.svc.ApplyProcessorEvent(t.Context(), ev) })
			}
		}
		wg.Go(func() {
			_, err := b.svc.RecoverDue(t.Context())
			errs <- err
		})
		wg.Go(func() {
			_, err := b.svc.PollPending(t.Context(), time.Minute, 32)
			errs <- err
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		wantState(t, b.mustGet(t, p.ID), payments.StatusCaptured, "10.50", "0.00")
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUND_FAILED"] != 1 {
			t.Errorf("events: %v", ev)
		}
	})
}

// An authorization Stripe cancels by itself (it expired uncaptured) and
// one captured in Stripe's dashboard, in part, are shown as Stripe left
// them once their events come, each twice: CANCELED and CAPTURED with
// what was captured, one event each under the payment's key, the read
// listed under the create; a capture asked afterwards is refused without
// a call to Stripe. An event that leaves the authorization as it was costs
// no read.
func TestAuthorizationSettledAtStripeIsShown(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		expired := stripeCard(t, b, "expired-auth", false)
		dashboard := stripeCard(t, b, "dashboard-capture", false)
		untouched := stripeCard(t, b, "untouched-auth", false)
		// What Stripe does by itself, with keys of its own.
		if _, err := b.conn.CancelPayment(t.Context(), processor.CancelRequest{IdempotencyKey: "stripe-expiry",
			Reference: expired.ProcessorReference}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.conn.CapturePayment(t.Context(), processor.CaptureRequest{IdempotencyKey: "stripe-dashboard",
			Reference: dashboard.ProcessorReference, AmountMinor: 800, Currency: "BRL"}); err != nil {
			t.Fatal(err)
		}
		applyEvents(t, b, d, expired.ProcessorReference, 2)
		applyEvents(t, b, d, dashboard.ProcessorReference, 2)

		wantSettledAtStripe(t, b, expired, dashboard)
		captures := d.Calls(stripedouble.CapturePaymentIntent)
		_, err := b.capture(t, expired.ID, "late-capture", nil)
		wantStateConflict(t, err, payments.StatusCanceled)
		if n := d.Calls(stripedouble.CapturePaymentIntent); n != captures {
			t.Errorf("%d captures sent for a payment Stripe canceled", n-captures)
		}

		reads := d.Calls(stripedouble.GetPaymentIntent)
		still := processor.Event{ID: "evt_still", Type: "payment_intent.amount_capturable_updated",
			PaymentReference: untouched.ProcessorReference, Payment: &processor.Payment{Reference: untouched.ProcessorReference,
				PaymentID: untouched.ID, State: processor.PaymentAuthorized}}
		if err := b.svc.ApplyProcessorEvent(t.Context(), still); err != nil {
			t.Fatal(err)
		}
		if n := d.Calls(stripedouble.GetPaymentIntent); n != reads {
			t.Errorf("an event that changes nothing cost %d reads", n-reads)
		}
		if got := b.mustGet(t, untouched.ID); got.Status != payments.StatusAuthorized {
			t.Errorf("the untouched authorization is %s", got.Status)
		}
	})
}

// An event whose object CMPay does not act on (a dispute) is applied as
// nothing: no read, no change, no error.
func TestOtherObjectsAreAppliedAsNothing(t *testing.T) {
	t.Parallel()
	b, d := stripeSetup(t, dbtest.SQLite(t))
	p := stripeCard(t, b, "disputed", true)
	reads := d.Calls(stripedouble.GetPaymentIntent) + d.Calls(stripedouble.GetRefund)
	ev := processor.Event{ID: "evt_dispute", Type: "charge.dispute.created", PaymentReference: p.ProcessorReference, Other: true}
	if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if n := d.Calls(stripedouble.GetPaymentIntent) + d.Calls(stripedouble.GetRefund); n != reads {
		t.Errorf("%d reads", n-reads)
	}
	wantState(t, b.mustGet(t, p.ID), payments.StatusCaptured, "10.50", "0.00")
}

// wantSettledAtStripe checks two authorizations Stripe settled by itself,
// as CMPay learned them (from an event or a read): expired CANCELED and
// dashboard CAPTURED for 8.00, each with its one event, expired with its
// create and one read.
func wantSettledAtStripe(t *testing.T, b *bundle, expired, dashboard payments.Payment) {
	t.Helper()
	got := b.mustGet(t, expired.ID)
	wantState(t, got, payments.StatusCanceled, "0.00", "0.00")
	if got.CanceledAt.IsZero() {
		t.Error("no canceledAt")
	}
	if ev := b.events(t, expired.ID); ev["PAYMENT_CANCELED"] != 1 {
		t.Errorf("the expired authorization's events: %v", ev)
	}
	if calls := b.calls(t, got); !slices.Equal(calls, []string{"CREATE_PAYMENT SUCCEEDED ", "CREATE_PAYMENT SUCCEEDED "}) {
		t.Errorf("its calls: %q; want the create and one read", calls)
	}
	got = b.mustGet(t, dashboard.ID)
	wantState(t, got, payments.StatusCaptured, "8.00", "0.00")
	if ev := b.events(t, dashboard.ID); ev["PAYMENT_CAPTURED"] != 1 {
		t.Errorf("the dashboard capture's events: %v", ev)
	}
}
