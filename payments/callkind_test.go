package payments_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// callKinds are a payment's processor calls as "KIND OPERATION OUTCOME
// state".
func (b *bundle) callKinds(t *testing.T, p payments.Payment) []string {
	t.Helper()
	all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all[0] {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", c.Kind, c.Operation, c.Outcome, c.RecordState)))
	}
	return out
}

// A read made to learn what came of an operation is listed as a READ,
// with the state it found: an expired boleto's calls read as two creates
// SUCCEEDED, and support asked whether the payer was charged twice. The
// create answered before it was stored (read from its payment) is a
// WRITE, whose record's state is not kept.
func TestProcessorCallsSayReadFromSent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		boleto := b.mustCreate(t, request("client-1", "boleto-read", "99.90", "BRL", payments.MethodBoleto)).Payment
		b.clock.Advance(73 * time.Hour) // SANDBOX_BOLETO_EXPIRY is 72 h
		if n, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil || n != 1 {
			t.Fatalf("PollPending past the expiry: %d, %v", n, err)
		}
		want := []string{"WRITE CREATE_PAYMENT SUCCEEDED pending", "READ CREATE_PAYMENT SUCCEEDED expired"}
		if got := b.callKinds(t, b.mustGet(t, boleto.ID)); !slices.Equal(got, want) {
			t.Errorf("the expired boleto's calls %q, want %q", got, want)
		}

		sync := setup(t, db)
		card := sync.mustCreate(t, card("card-foreseen")).Payment
		want = []string{"WRITE CREATE_PAYMENT SUCCEEDED"}
		if got := sync.callKinds(t, card); !slices.Equal(got, want) {
			t.Errorf("a sandbox card's calls %q, want %q", got, want)
		}
	})
}

// A Stripe refund answered pending, then read while still pending, then
// read once it succeeded: one refund sent, two reads, each with what it
// found. It showed "refund SUCCEEDED" three times.
func TestPendingRefundCallsSayWhatEachFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{RefundsPending: true})
		p := stripeCard(t, b, "refund-read", true)
		res, err := b.refund(t, p.ID, "refund-1", ptr("1.00"))
		if err != nil || res.Refund == nil || res.Refund.Status != payments.RefundProcessing {
			t.Fatalf("refund: %+v, %v; want it PROCESSING", res.Refund, err)
		}
		round := func() {
			t.Helper()
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		round()
		if ids := d.RefundsFor(res.Refund.ID); len(ids) != 1 || d.SettleRefund(ids[0], true, "") != nil {
			t.Fatalf("settle the refund at the double: %v", ids)
		}
		round()
		if got := refundOf(t, b, p.ID, res.Refund.ID); got.Status != payments.RefundSucceeded {
			t.Fatalf("the refund is %s after the double settled it, want SUCCEEDED", got.Status)
		}
		var refunds []string
		for _, c := range b.callKinds(t, b.mustGet(t, p.ID)) {
			if strings.Contains(c, "REFUND_PAYMENT") {
				refunds = append(refunds, c)
			}
		}
		want := []string{"WRITE REFUND_PAYMENT SUCCEEDED pending", "READ REFUND_PAYMENT SUCCEEDED pending",
			"READ REFUND_PAYMENT SUCCEEDED succeeded"}
		if !slices.Equal(refunds, want) {
			t.Errorf("the refund's calls %q, want %q", refunds, want)
		}
	})
}
