package payments_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// callKinds are a payment's processor calls as "KIND OPERATION OUTCOME",
// and a read's state found. A write's state is not checked: a create
// settled in a batch (settle_batch.sql) does not keep it.
func (b *bundle) callKinds(t *testing.T, p payments.Payment) []string {
	t.Helper()
	all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all[0] {
		line := fmt.Sprintf("%s %s %s", c.Kind, c.Operation, c.Outcome)
		if c.Kind == payments.CallRead {
			line += " " + c.RecordState
		}
		out = append(out, line)
	}
	return out
}

// A read made to learn what came of an operation is listed as a READ,
// with the state it found: an expired boleto's calls read as two creates
// SUCCEEDED, and support asked whether the payer was charged twice. The
// create answered before it was stored (read from its payment) is a WRITE.
func TestProcessorCallsSayReadFromSent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		boleto := b.mustCreate(t, request("client-1", "boleto-read", "99.90", "BRL", payments.MethodBoleto)).Payment
		b.clock.Advance(73 * time.Hour) // SANDBOX_BOLETO_EXPIRY is 72 h
		if n, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil || n != 1 {
			t.Fatalf("PollPending past the expiry: %d, %v", n, err)
		}
		want := []string{"WRITE CREATE_PAYMENT SUCCEEDED", "READ CREATE_PAYMENT SUCCEEDED expired"}
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
