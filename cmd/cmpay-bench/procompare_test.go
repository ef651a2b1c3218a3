package main

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/stripedouble"
)

// TestStripeRefundTakesItsOwnDoublesPayments: the stripe-refund mode
// refunds only the payments its own double made, not the card payments
// an earlier "stripe" mode of the round left in the schema through
// another double, which this one would answer as missing.
func TestStripeRefundTakesItsOwnDoublesPayments(t *testing.T) {
	d := stripedouble.New(stripedouble.Options{})
	defer d.Close()
	form := url.Values{"amount": {"1050"}, "currency": {"brl"}, "confirm": {"true"},
		"payment_method": {cardToken}, "metadata[cmpay_payment_id]": {"pay_here"}}
	req, err := http.NewRequest(http.MethodPost, d.URL()+"/v1/payment_intents", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk_test_bench")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the double answered the intent %d", res.StatusCode)
	}
	if got := madeThrough(d, []string{"pay_elsewhere", "pay_here", "pay_other"}); !slices.Equal(got, []string{"pay_here"}) {
		t.Fatalf("madeThrough = %v, want [pay_here]", got)
	}
}
