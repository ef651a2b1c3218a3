package payments_test

import (
	"errors"
	"strings"
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
			func() (string, error) { return b.svc.PaymentOfReference(t.Context(), "sbx_pi.none") },
		} {
			if got, err := find(); !errors.Is(err, payments.ErrNotFound) || got != "" {
				t.Errorf("an unknown one found %q, %v; want ErrNotFound", got, err)
			}
		}
	})
}

// A reference at a processor other than the sandbox (what the processor's
// events and support staff name a payment by) is found through
// idx_payments_external_reference; the sandbox's payments, every create of
// the embedded default, are left out of that index so that a create pays
// no entry in it.
func TestPaymentOfReferenceUsesItsIndex(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		seedPayments(t, db, 10_000)
		if err := db.Gorm.Exec(`UPDATE payments SET processor = 'stripe', processor_reference = 'pi_' || id
			WHERE id LIKE 'pay_seed1%'`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`UPDATE payments SET processor_reference = 'sbx_pi.' || id WHERE processor = 'sandbox'`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`ANALYZE`).Error; err != nil {
			t.Fatal(err)
		}
		plan := dbtest.Plan(t, db, payments.LookupSQL("payment_of_reference"), "pi_pay_seed1234")
		if !strings.Contains(plan, "idx_payments_external_reference") {
			t.Errorf("%s plan:\n%s\nwant idx_payments_external_reference", db.Dialect, plan)
		}
		def := `SELECT indexdef FROM pg_indexes WHERE indexname = 'idx_payments_external_reference'`
		if db.Dialect == "sqlite" {
			def = `SELECT sql FROM sqlite_master WHERE name = 'idx_payments_external_reference'`
		}
		var sql string
		if err := db.Gorm.Raw(def).Scan(&sql).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sql, "sandbox") {
			t.Errorf("%s index %q holds the sandbox's payments too", db.Dialect, sql)
		}
	})
}

// The sandbox's references, not indexed, are looked for by reading the
// table only when the text is shaped as one (sbx_pi.…): the admin's search
// asks for every client id or key typed in it, and read the whole table
// each time. A sandbox payment stored under another shape is not found.
func TestPaymentOfReferenceReadsTheTableOnlyForSandboxShapes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		p := b.mustCreate(t, withToken(card("shaped"), "pm_card_visa")).Payment
		if got, err := b.svc.PaymentOfReference(t.Context(), p.ProcessorReference); got != p.ID || err != nil {
			t.Fatalf("PaymentOfReference(%s) = %q, %v; want %s", p.ProcessorReference, got, err, p.ID)
		}
		if err := db.Gorm.Exec(`UPDATE payments SET processor_reference = 'client-7' WHERE id = ?`, p.ID).Error; err != nil {
			t.Fatal(err)
		}
		if got, err := b.svc.PaymentOfReference(t.Context(), "client-7"); !errors.Is(err, payments.ErrNotFound) {
			t.Errorf("PaymentOfReference(client-7) = %q, %v; want ErrNotFound without reading the table", got, err)
		}
	})
}
