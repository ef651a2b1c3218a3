package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// asOfQuery selects an event's payment with its lists.
const asOfQuery = `subscription($payment: ID, $after: ID) {
  paymentEvents(paymentId: $payment, after: $after) {
    type
    payment { status refundedAmount refundCount attemptCount processorCallCount processorCalls { operation } refunds { idempotencyKey status } attempts { operation outcome } }
  }
}`

// TestEventPaymentListsAsOfEvent: an event's payment, replayed over SSE
// from `after` once everything happened (a replay of a refund's key
// included), lists the refunds, attempts and processor calls made up to
// its event, as its status and amounts say, not the payment's lists as
// they are now; its refunds are the webhook body's.
func TestEventPaymentListsAsOfEvent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		in := input("shop-asof", "10", "BRL", "CREDIT_CARD")
		in["capture"] = false
		id := b.create(t, "asof", in).Payment.ID
		b.mustGQL(t, `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, amount: "8", idempotencyKey: $key) { replayed } }`,
			map[string]any{"id": id, "key": "asof-cap"})
		b.mustGQL(t, refundMutation, map[string]any{"id": id, "key": "asof-r1", "amount": "3"})
		b.mustGQL(t, refundMutation, map[string]any{"id": id, "key": "asof-r2", "amount": "5"})
		b.mustGQL(t, refundMutation, map[string]any{"id": id, "key": "asof-r1", "amount": "3"}) // a replay: no event

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+token, asOfQuery,
			map[string]any{"payment": id, "after": "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		want := []string{
			"PAYMENT_CREATED AUTHORIZED 0.00 refunds 0 [] attempts 1 [CREATE_PAYMENT:CREATED] calls 1 [CREATE_PAYMENT]",
			"PAYMENT_CAPTURED CAPTURED 0.00 refunds 0 [] attempts 2 [CREATE_PAYMENT:CREATED CAPTURE_PAYMENT:APPLIED] calls 2 [CREATE_PAYMENT CAPTURE_PAYMENT]",
			"PAYMENT_REFUNDED PARTIALLY_REFUNDED 3.00 refunds 1 [asof-r1:SUCCEEDED] attempts 3 [CREATE_PAYMENT:CREATED CAPTURE_PAYMENT:APPLIED REFUND_PAYMENT:APPLIED] calls 3 [CREATE_PAYMENT CAPTURE_PAYMENT REFUND_PAYMENT]",
			"PAYMENT_REFUNDED REFUNDED 8.00 refunds 2 [asof-r1:SUCCEEDED asof-r2:SUCCEEDED] attempts 4 [CREATE_PAYMENT:CREATED CAPTURE_PAYMENT:APPLIED REFUND_PAYMENT:APPLIED REFUND_PAYMENT:APPLIED] calls 4 [CREATE_PAYMENT CAPTURE_PAYMENT REFUND_PAYMENT REFUND_PAYMENT]",
		}
		for i, w := range want {
			event, data, err := stream.Next()
			if err != nil || event != "next" {
				t.Fatalf("event %d: %s %s %v", i, event, data, err)
			}
			if got := asOfEvent(t, data); got != w {
				t.Errorf("event %d:\n got %s\nwant %s", i, got, w)
			}
		}
	})
}

// asOfEvent describes an event asOfQuery selected, as
// TestEventPaymentListsAsOfEvent's want does.
func asOfEvent(t *testing.T, data []byte) string {
	t.Helper()
	var resp struct {
		Data struct {
			PaymentEvents struct {
				Type    string
				Payment struct {
					Status, RefundedAmount    string
					RefundCount, AttemptCount int
					ProcessorCallCount        int
					ProcessorCalls            []struct{ Operation string }
					Refunds                   []struct{ IdempotencyKey, Status string }
					Attempts                  []struct{ Operation, Outcome string }
				}
			}
		}
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	e := resp.Data.PaymentEvents
	var refunds, attempts []string
	for _, r := range e.Payment.Refunds {
		refunds = append(refunds, r.IdempotencyKey+":"+r.Status)
	}
	for _, a := range e.Payment.Attempts {
		attempts = append(attempts, a.Operation+":"+a.Outcome)
	}
	var calls []string
	for _, c := range e.Payment.ProcessorCalls {
		calls = append(calls, c.Operation)
	}
	return fmt.Sprintf("%s %s %s refunds %d [%s] attempts %d [%s] calls %d [%s]", e.Type, e.Payment.Status,
		e.Payment.RefundedAmount, e.Payment.RefundCount, strings.Join(refunds, " "), e.Payment.AttemptCount,
		strings.Join(attempts, " "), e.Payment.ProcessorCallCount, strings.Join(calls, " "))
}
