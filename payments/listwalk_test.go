package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// A create whose key's answer is a stored 500, its list of Stripe's
// payments two pages long (150 others made in its window), the second
// page failing: the next round goes on from the second page, so three
// pages are asked for in all (the first, the failed second, the second
// again), not four; the create is then sent again once and charged once.
func TestStoredErrorCreateListResumesAtTheFailedPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		p := b.mustCreate(t, withToken(card("list-resume"), "pm_card_visa")).Payment
		createOthers(t, b, 150, time.Second)
		lists := d.Calls(stripedouble.ListPaymentIntents)
		d.FailNth(stripedouble.ListPaymentIntents, lists+2, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		got := recoverUntilSettled(t, b, p.ID)
		if pages := d.Calls(stripedouble.ListPaymentIntents) - lists; pages != 3 {
			t.Errorf("%d list pages asked for; want 3 (the second again, not the first)", pages)
		}
		checkCapturedOnce(t, d, got)
	})
}

// A create whose 500 came after its intent was made (500_after), only
// authorized, its intent on the first page of the list and the second
// page failing; Stripe then cancels the authorization before the next
// round. That round goes on from the second page, and reads the intent
// the first page found afresh: CMPay shows it canceled, not authorized
// as the first page had it.
func TestResumedListReadsTheIntentItFoundAfresh(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, DoubleLag: time.Hour})
		createOthers(t, b, 150, time.Second) // before it: its intent is on the first page
		b.clock.Advance(time.Second)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		req, capture := withToken(card("list-fresh"), "pm_card_visa"), false
		req.Capture = &capture
		p := b.mustCreate(t, req).Payment
		intents := d.IntentsFor(p.ID)
		if len(intents) != 1 {
			t.Fatalf("the double holds intents %v for %s; want one", intents, p.ID)
		}
		lists := d.Calls(stripedouble.ListPaymentIntents)
		d.FailNth(stripedouble.ListPaymentIntents, lists+2, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		for round := 0; d.Calls(stripedouble.ListPaymentIntents) < lists+2; round++ {
			if round == 20 {
				t.Fatalf("%d list pages asked for in 20 rounds; want the failed second", d.Calls(stripedouble.ListPaymentIntents)-lists)
			}
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.ExpireAuthorization(intents[0]); err != nil {
			t.Fatal(err)
		}
		if got := recoverUntilSettled(t, b, p.ID); got.Status != payments.StatusCanceled {
			t.Errorf("CMPay shows %s; the double's intent is %s", got.Status, d.Status(intents[0]))
		}
		if pages := d.Calls(stripedouble.ListPaymentIntents) - lists; pages != 3 {
			t.Errorf("%d list pages asked for; want 3 (the second again, not the first)", pages)
		}
	})
}
