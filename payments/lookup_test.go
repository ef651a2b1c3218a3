package payments_test

import (
	"errors"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// A refund's id and the processor's reference each find their payment:
// support staff quote either, and the admin's search found neither.
func TestPaymentOfRefundAndReference(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		p := b.mustCreate(t, withToken(card("paid"), "pm_card_visa")).Payment
		b.mustCreate(t, withToken(card("other"), "pm_card_visa"))
		if p.ProcessorReference == "" {
			t.Fatalf("the sandbox gave %s no reference", p.ID)
		}
		amount := "1.00"
		res, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, Amount: &amount, IdempotencyKey: "r-1",
			Origin: payments.Origin{Transport: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.svc.PaymentOfRefund(t.Context(), res.Refund.ID); got != p.ID || err != nil {
			t.Errorf("PaymentOfRefund(%s) = %q, %v; want %s", res.Refund.ID, got, err, p.ID)
		}
		if got, err := b.svc.PaymentOfReference(t.Context(), p.ProcessorReference); got != p.ID || err != nil {
			t.Errorf("PaymentOfReference(%s) = %q, %v; want %s", p.ProcessorReference, got, err, p.ID)
		}
		for _, find := range []func() (string, error){
			func() (string, error) { return b.svc.PaymentOfRefund(t.Context(), "ref_none") },
			func() (string, error) { return b.svc.PaymentOfReference(t.Context(), "sbx_pi_none") },
		} {
			if got, err := find(); !errors.Is(err, payments.ErrNotFound) || got != "" {
				t.Errorf("an unknown one found %q, %v; want ErrNotFound", got, err)
			}
		}
	})
}
