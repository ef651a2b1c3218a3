package payments

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// An instance whose claim on an operation ran out while it was busy with
// others does not ask for it: another instance that claimed it since does,
// alone.
func TestResolveSkipsAnOperationTakenOver(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		conn, d := doubledStripe(t)
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		newSvc := func() *Service {
			s, err := NewService(db.Gorm, Config{Processor: conn, ProcessorTimeout: time.Second, RecoveryAfter: time.Second, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		a, b := newSvc(), newSvc()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		tok := "pm_card_visa"
		res, err := a.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: "k", Amount: "10", Currency: "BRL",
			Method: MethodCreditCard, PaymentMethodToken: &tok, Origin: Origin{Transport: "test"}})
		if err != nil || res.Payment.Status != StatusProcessing {
			t.Fatalf("create: %s, %v", res.Payment.Status, err)
		}
		now = now.Add(time.Minute)
		ids, err := a.store.claimDue(t.Context(), a.instance, now.Add(time.Second), now, 1, a.processorNames())
		if err != nil || len(ids) != 1 {
			t.Fatalf("a's claim: %v, %v", ids, err)
		}
		now = now.Add(time.Minute) // a's lease runs out while it works on others
		if taken, err := b.store.claimDue(t.Context(), b.instance, now.Add(time.Minute), now, 1, b.processorNames()); err != nil || len(taken) != 1 {
			t.Fatalf("b's claim: %v, %v", taken, err)
		}
		before := d.Calls(stripedouble.CreatePaymentIntent)
		if err := a.resolve(t.Context(), ids[0]); err != nil {
			t.Fatal(err)
		}
		if got := d.Calls(stripedouble.CreatePaymentIntent); got != before {
			t.Errorf("a asked for an operation b holds: %d calls, want %d", got, before)
		}
		if err := b.resolve(t.Context(), ids[0]); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := b.store.readPayment(t.Context(), res.Payment.ID); got.Status != StatusCaptured {
			t.Errorf("b's resolution: %s, want CAPTURED", got.Status)
		}
	})
}

// doubledStripe is the Stripe connector against a double of its own, with
// a one-second timeout; both end with the test.
func doubledStripe(t *testing.T) (*stripe.Connector, *stripedouble.Double) {
	t.Helper()
	d := stripedouble.New(stripedouble.Options{})
	t.Cleanup(d.Close)
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, "sk_test_double", d.URL(), time.Second
	conn, err := stripe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	return conn, d
}
