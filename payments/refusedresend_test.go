package payments_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// A refund sent again under a new key and refused is read again from the
// payment's list of refunds before it settles (payments/resend.go,
// refusedResend); TestARefusedResendOfARefundCompletedMeanwhileSucceeds
// has the first request completed meanwhile.

// callCounter counts the processor calls the service's hook is told of,
// by operation: the calls metric.
type callCounter struct {
	mu sync.Mutex
	n  map[payments.Operation]int
}

func (c *callCounter) onCall(op payments.Operation, _ payments.CallOutcome, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

func (c *callCounter) count(op payments.Operation) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// A full refund whose first request got a stored 500 while the whole
// charge was refunded in Stripe's dashboard: no refund carries its id, so
// it is sent again under _a2, which Stripe refuses, and the list read
// again still holds none with its id. The refusal is then the processor's
// word: FAILED with Stripe's code, its amount released, announced, and no
// duplicate recorded. Every call, the read after the refusal included, is
// a row of the refund's calls and counted once in the calls metric.
func TestARefusedResendOfARefundNotMadeFails(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		calls := &callCounter{n: map[payments.Operation]int{}}
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, OnProcessorCall: calls.onCall})
		p := stripeCard(t, b, "refused-for-real", true)
		d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "full",
			Amount: new("10.50")}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.conn.RefundPayment(t.Context(), processor.RefundRequest{IdempotencyKey: "dashboard",
			PaymentReference: p.ProcessorReference, AmountMinor: 1050, Currency: "BRL"}); err != nil {
			t.Fatal(err)
		}
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		refunds, err := b.svc.RefundsOf(t.Context(), []payments.Payment{settled})
		if err != nil {
			t.Fatal(err)
		}
		if r := refunds[0]; len(r) != 1 || r[0].Status != payments.RefundFailed ||
			r[0].FailureCode != "charge_already_refunded" || settled.Refunded.Minor != 0 {
			t.Fatalf("refunds %+v, refunded %d; want one FAILED charge_already_refunded, nothing refunded",
				r, settled.Refunded.Minor)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUND_FAILED"] != 1 || ev["PAYMENT_REFUNDED"] != 0 {
			t.Errorf("events %v, want one PAYMENT_REFUND_FAILED", ev)
		}
		want := []string{"WRITE a1 UNKNOWN server_error", "WRITE a1 UNKNOWN server_error", "READ a1 ERROR none_found",
			"WRITE a2 DECLINED charge_already_refunded", "READ a2 ERROR none_found"}
		got := refundCalls(t, b, settled)
		if !slices.Equal(got, want) {
			t.Errorf("refund calls %q, want %q", got, want)
		}
		if n := calls.count(payments.OpRefund); n != len(got) {
			t.Errorf("the calls metric counted %d refund calls, want one a row: %d", n, len(got))
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 0 {
			t.Errorf("duplicates %+v, want none", got)
		}
	})
}

// The refused _a2 of a refund whose first request Stripe completed
// meanwhile, when the list read after the refusal fails: the refund is
// left unsettled, never FAILED, and the next recovery asks under _a2
// again (Stripe answers the refusal again, nothing is sent under a third
// key), reads the list, and settles SUCCEEDED on the first request's
// refund.
func TestARefusedResendWhoseReadFailsIsAskedAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, stray := refundRolledForwardBeforeItsResend(t, b, d, "refused-read-fails", func() {
			d.FailNext(stripedouble.ListRefunds, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		})
		got := b.mustGet(t, p.ID)
		refunds, err := b.svc.RefundsOf(t.Context(), []payments.Payment{got})
		if err != nil {
			t.Fatal(err)
		}
		if r := refunds[0]; got.Reserved.Minor != 1050 || len(r) != 1 || r[0].Status != payments.RefundProcessing ||
			got.Refunded.Minor != 0 {
			t.Fatalf("reserved %d, refunds %+v, refunded %d; want the refund PROCESSING, its amount reserved",
				got.Reserved.Minor, r, got.Refunded.Minor)
		}
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if ref := refundReference(t, b, p.ID); settled.Refunded.Minor != 1050 || ref != stray {
			t.Errorf("refunded %d, reference %q; want 1050, Stripe's %s", settled.Refunded.Minor, ref, stray)
		}
		want := []string{"WRITE a1 UNKNOWN server_error", "WRITE a1 UNKNOWN server_error", "READ a1 ERROR none_found",
			"WRITE a2 DECLINED charge_already_refunded", "READ a2 UNKNOWN server_error",
			"WRITE a2 DECLINED charge_already_refunded", "READ a2 SUCCEEDED "}
		if calls := refundCalls(t, b, settled); !slices.Equal(calls, want) {
			t.Errorf("refund calls %q, want %q", calls, want)
		}
		if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 2 {
			t.Errorf("refund keys %q, want the first and its _a2", keys)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUNDED"] != 1 || ev["PAYMENT_REFUND_FAILED"] != 0 {
			t.Errorf("events %v, want one PAYMENT_REFUNDED", ev)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 0 || s.count(payments.OpRefund) != 0 {
			t.Errorf("duplicates %+v, want none", got)
		}
	})
}

// The refused _a2 of a refund whose first request Stripe completed
// meanwhile into a refund still pending: the refund stays PROCESSING, as
// recovery's read leaves a pending one, and settles SUCCEEDED on it once
// Stripe says it succeeded.
func TestARefusedResendOfARefundPendingWaitsForIt(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{OnFakeClock: true, RefundsPending: true})
		p, stray := refundRolledForwardBeforeItsResend(t, b, d, "refused-pending", nil)
		got := b.mustGet(t, p.ID)
		if got.Reserved.Minor != 1050 || got.Refunded.Minor != 0 {
			t.Fatalf("reserved %d, refunded %d; want the refund left unsettled while Stripe's is pending",
				got.Reserved.Minor, got.Refunded.Minor)
		}
		if calls := refundCalls(t, b, got); calls[len(calls)-1] != "READ a2 SUCCEEDED " {
			t.Fatalf("refund calls %q, want the last the read that found the pending refund", calls)
		}
		if err := d.SettleRefund(stray, true, ""); err != nil {
			t.Fatal(err)
		}
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if ref := refundReference(t, b, p.ID); settled.Refunded.Minor != 1050 || ref != stray {
			t.Errorf("refunded %d, reference %q; want 1050, Stripe's %s", settled.Refunded.Minor, ref, stray)
		}
		if keys := d.Keys(stripedouble.CreateRefund); len(keys) != 2 {
			t.Errorf("refund keys %q, want the first and its _a2", keys)
		}
	})
}
