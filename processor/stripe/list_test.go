package stripe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

// ListPaymentsCreated finds an intent at once where search lags, only
// within its window, only for its payment id, across pages (more than
// one page of 100 in the window).
func TestListPaymentsCreated(t *testing.T) {
	conn, _, c := setup(t, stripedouble.Options{SearchLag: time.Hour})
	ctx := context.Background()
	from := c.Now()
	for i := range 120 {
		if _, err := conn.CreatePayment(ctx, cardReq(fmt.Sprintf("cmpay_other%d", i), fmt.Sprintf("pay_other%d", i), "pm_card_visa", true)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := conn.CreatePayment(ctx, cardReq("cmpay_wanted", "pay_wanted", "pm_card_visa", true))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := conn.CreatePayment(ctx, cardReq(fmt.Sprintf("cmpay_later%d", i), fmt.Sprintf("pay_later%d", i), "pm_card_visa", true)); err != nil {
			t.Fatal(err)
		}
	}
	if found, err := conn.FindPayments(ctx, "pay_wanted"); err != nil || len(found) != 0 {
		t.Fatalf("search found %v, %v during its lag", found, err)
	}
	found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", from, c.Now(), nil)
	if err != nil || len(found) != 1 || found[0].Reference != p.Reference || found[0].PaymentID != "pay_wanted" {
		t.Errorf("listed %+v, %v; want %s", found, err, p.Reference)
	}
	c.Add(time.Hour)
	if found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", c.Now(), c.Now().Add(time.Minute), nil); err != nil || len(found) != 0 {
		t.Errorf("listed %+v, %v outside its window", found, err)
	}
}

// A list whose second page fails (a 500) keeps the first page's intents
// and its cursor in the walk: given the walk again, it reads the second
// page alone, not the first again, and finds the intent on either page.
func TestListPaymentsCreatedResumesAtTheFailedPage(t *testing.T) {
	conn, d, c := setup(t, stripedouble.Options{SearchLag: time.Hour})
	ctx := context.Background()
	from := c.Now()
	create := func(key, id string) {
		t.Helper()
		if _, err := conn.CreatePayment(ctx, cardReq(key, id, "pm_card_visa", true)); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Second) // the list is newest first
	}
	create("cmpay_old", "pay_wanted") // the oldest: on the second page
	for i := range 150 {
		create(fmt.Sprintf("cmpay_other%d", i), fmt.Sprintf("pay_other%d", i))
	}
	create("cmpay_new", "pay_wanted") // the newest: on the first page
	pages := d.Calls(stripedouble.ListPaymentIntents)
	d.FailNth(stripedouble.ListPaymentIntents, pages+2, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
	var walk processor.ListWalk
	if found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", from, c.Now(), &walk); err == nil {
		t.Fatalf("listed %v with its second page failing; want the error", found)
	}
	if walk.After == "" || len(walk.Found) != 1 {
		t.Fatalf("walk %+v after the failed page; want the first page's cursor and its one intent", walk)
	}
	found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", from, c.Now(), &walk)
	if err != nil || len(found) != 2 {
		t.Fatalf("listed %v, %v on resuming; want both intents", found, err)
	}
	if n := d.Calls(stripedouble.ListPaymentIntents) - pages; n != 3 {
		t.Errorf("%d pages asked for; want 3 (the first, the failed second, the second again)", n)
	}
}
