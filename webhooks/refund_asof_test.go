package webhooks_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
	"github.com/cmpay/cmpay/webhooks"
)

// TestBodyRefundsAsOfEvent: every delivery's payment lists its refunds as
// they were right after its event, whenever the body is built. A refund
// Stripe returns after it succeeded is SUCCEEDED in its PAYMENT_REFUNDED
// and FAILED from its PAYMENT_REFUND_FAILED on (whose payment, refunded
// 0.00, still lists it), and a refund made later is not listed before its
// event. One endpoint takes each event as it comes, alone in its batch;
// the other refuses everything until the end, so that its bodies are all
// built after the last change, several events of one payment to a batch.
func TestBodyRefundsAsOfEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		d := stripedouble.New(stripedouble.Options{})
		t.Cleanup(d.Close)
		cfg := processor.DefaultConfig()
		cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, "sk_test_asof", d.URL(), 2*time.Second
		conn, err := stripe.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.CloseIdleConnections)
		ev, err := events.New(db.Gorm, events.Options{Logger: quiet, Poll: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		pay, err := payments.NewService(db.Gorm, payments.Config{Processor: conn, ProcessorTimeout: cfg.Timeout, RecoveryAfter: time.Second,
			OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
		if err != nil {
			t.Fatal(err)
		}
		wh, err := webhooks.New(db.Gorm, ev, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		run(t, ev.Run)
		live, late := newReceiver(t, 0), newReceiver(t, 1<<40)
		for _, rcv := range []*receiver{live, late} {
			_, secret, err := wh.CreateEndpoint(t.Context(), "", rcv.srv.URL+"/hooks", nil)
			if err != nil {
				t.Fatal(err)
			}
			rcv.secret.Store(&secret)
		}
		run(t, wh.Run)
		delivered := func(n int) {
			t.Helper()
			ev.Wake()
			waitFor(t, 10*time.Second, fmt.Sprintf("%d events delivered", n), func() bool { return live.distinct() == n })
		}

		ctx, o, tok := t.Context(), payments.Origin{Transport: "test"}, "pm_card_visa"
		card, err := pay.Create(ctx, payments.CreateRequest{ClientID: "shop-asof", IdempotencyKey: "asof", Amount: "50",
			Currency: "BRL", Method: payments.MethodCreditCard, PaymentMethodToken: &tok, Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		delivered(1)
		first, err := pay.Refund(ctx, payments.RefundRequest{PaymentID: card.Payment.ID, Amount: ptr("10"), IdempotencyKey: "asof-r1", Origin: o})
		if err != nil || first.Refund.Status != payments.RefundSucceeded {
			t.Fatalf("refund: %+v %v", first.Refund, err)
		}
		delivered(2)
		if err := d.FailRefund(d.RefundsFor(first.Refund.ID)[0], "expired_or_canceled_card"); err != nil {
			t.Fatal(err)
		}
		for _, se := range d.EventsFor(card.Payment.ProcessorReference) {
			pe, err := stripe.DecodeEvent(se.Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := pay.ApplyProcessorEvent(ctx, pe); err != nil {
				t.Fatal(err)
			}
		}
		delivered(3)
		if _, err := pay.Refund(ctx, payments.RefundRequest{PaymentID: card.Payment.ID, Amount: ptr("5"), IdempotencyKey: "asof-r2", Origin: o}); err != nil {
			t.Fatal(err)
		}
		delivered(4)
		late.mu.Lock()
		late.failFirst = 0
		late.mu.Unlock()
		waitFor(t, 10*time.Second, "the late endpoint's 4 events", func() bool { return late.distinct() == 4 })

		// Each event's type, refundedAmount, data.refund and payment refunds
		// (key:status:failureCode).
		want := []string{
			"PAYMENT_CREATED 0.00 - []",
			"PAYMENT_REFUNDED 10.00 asof-r1:SUCCEEDED: [asof-r1:SUCCEEDED:]",
			"PAYMENT_REFUND_FAILED 0.00 asof-r1:FAILED:expired_or_canceled_card [asof-r1:FAILED:expired_or_canceled_card]",
			"PAYMENT_REFUNDED 5.00 asof-r2:SUCCEEDED: [asof-r1:FAILED:expired_or_canceled_card asof-r2:SUCCEEDED:]",
		}
		for name, rcv := range map[string]*receiver{"live": live, "late": late} {
			if got := asOfSummary(rcv); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s endpoint's bodies:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	})
}

// asOfSummary describes the bodies rcv accepted, oldest event first, as
// TestBodyRefundsAsOfEvent's want does.
func asOfSummary(rcv *receiver) []string {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	refund := func(key, status string, code *string) string {
		c := ""
		if code != nil {
			c = *code
		}
		return key + ":" + status + ":" + c
	}
	var out []string
	for id := 1; len(out) < len(rcv.bodies); id++ {
		b, ok := rcv.bodies[fmt.Sprint(id)]
		if !ok {
			if id > 1000 {
				break
			}
			continue
		}
		own := "-"
		if b.Data.Refund != nil {
			own = refund(b.Data.Refund.IdempotencyKey, b.Data.Refund.Status, b.Data.Refund.FailureCode)
		}
		var list []string
		for _, r := range b.Data.Payment.Refunds {
			list = append(list, refund(r.IdempotencyKey, r.Status, r.FailureCode))
		}
		out = append(out, fmt.Sprintf("%s %s %s [%s]", b.Type, b.Data.Payment.RefundedAmount, own, strings.Join(list, " ")))
	}
	return out
}
