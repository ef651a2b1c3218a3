package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
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
