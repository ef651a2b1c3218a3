package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// The admin's search box takes a refund's id or the processor's reference
// and goes to the payment; both found nothing before.
func TestAdminSearchFindsRefundsAndReferences(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		id := b.create(t, "searched", input("acme", "10", "BRL", "PIX")).Payment.ID
		b.create(t, "other", input("acme", "10", "BRL", "PIX"))
		amount := "1"
		res, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: id, Amount: &amount, IdempotencyKey: "r-1",
			Origin: payments.Origin{Transport: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.svc.Get(t.Context(), id)
		if err != nil || p.ProcessorReference == "" {
			t.Fatalf("the payment has no reference: %+v, %v", p, err)
		}
		for _, q := range []string{res.Refund.ID, p.ProcessorReference, id} {
			got, _ := b.adminPage(t, "/admin?q="+q)
			if got.StatusCode != http.StatusSeeOther || got.Header.Get("Location") != "/admin/payments/"+id {
				t.Errorf("search for %s: %d to %q, want %s", q, got.StatusCode, got.Header.Get("Location"), id)
			}
		}
		for _, q := range []string{"ref_none", "sbx_pi_none", "pay_none", "acme"} {
			if got, _ := b.adminPage(t, "/admin?q="+q); got.StatusCode != http.StatusOK {
				t.Errorf("search for %s: %d, want the list (200)", q, got.StatusCode)
			}
		}
	})
}
