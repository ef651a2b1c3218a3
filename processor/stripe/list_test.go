package stripe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
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
	found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", from, c.Now())
	if err != nil || len(found) != 1 || found[0].Reference != p.Reference || found[0].PaymentID != "pay_wanted" {
		t.Errorf("listed %+v, %v; want %s", found, err, p.Reference)
	}
	c.Add(time.Hour)
	if found, err := conn.ListPaymentsCreated(ctx, "pay_wanted", c.Now(), c.Now().Add(time.Minute)); err != nil || len(found) != 0 {
		t.Errorf("listed %+v, %v outside its window", found, err)
	}
}
