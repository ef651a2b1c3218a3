package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// A capture's call answered 400 idempotency_error (the key's first request
// at Stripe asked for something else) is logged as a mismatch, not as an
// error stored under the key: nothing of this call's is stored there.
func TestMismatchIsLoggedAsOne(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var logs logBuffer
		b, d := stripeWith(t, db, stripeOpts{Logger: logs.logger()})
		b.clock.Advance(time.Minute) // a new interval for the sampled lines
		p := stripeCard(t, b, "logged-mismatch", false)
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if res, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "m-" + p.ID}); err != nil ||
			res.Payment.PendingOperation != payments.OpCapture {
			t.Fatalf("first answer %+v, %v; want the capture pending", res.Payment, err)
		}
		var key string
		if err := db.Gorm.Raw(`SELECT key FROM processor_operations WHERE payment_id = ? AND operation = ?`,
			p.ID, string(payments.OpCapture)).Row().Scan(&key); err != nil {
			t.Fatal(err)
		}
		// The key's first request at Stripe was a capture of 0.01 whose 500
		// Stripe stored.
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		if _, err := b.conn.CapturePayment(t.Context(), processor.CaptureRequest{IdempotencyKey: key,
			Reference: p.ProcessorReference, AmountMinor: 1, Currency: p.Amount.Currency}); err == nil {
			t.Fatal("the other request under the key succeeded; want its stored 500")
		}
		recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
		var classes []string
		for _, l := range logs.linesFor(t, failedLine, p.ID) {
			classes = append(classes, l["class"].(string))
			_, stored := l["stored"]
			_, mismatch := l["mismatch"]
			if l["class"] == "idempotency_mismatch" && (stored || l["mismatch"] != true) {
				t.Errorf("mismatch line %v; want mismatch true and no stored", l)
			}
			if l["class"] != "idempotency_mismatch" && (stored || mismatch) {
				t.Errorf("line %v; want neither stored nor mismatch", l)
			}
		}
		if len(classes) != 2 || classes[1] != "idempotency_mismatch" {
			t.Errorf("lines of classes %q, want the 500's, then the mismatch's", classes)
		}
	})
}
