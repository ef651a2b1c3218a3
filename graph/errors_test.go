package graph

import (
	"context"
	"fmt"
	"testing"

	"github.com/cmpay/cmpay/payments"
)

// GraphQL clients get the processor's refusal and a pending operation in
// extensions, through the same mapping as REST.
func TestPresentProcessorErrors(t *testing.T) {
	ctx := context.Background()
	refused := presentError(ctx, fmt.Errorf("refund p1: %w",
		&payments.ProcessorRefusedError{Operation: payments.OpRefund, PaymentID: "p1", Code: "charge_disputed"}))
	if refused.Extensions["code"] != "PROCESSOR_REFUSED" || refused.Extensions["processorCode"] != "charge_disputed" {
		t.Errorf("refused: %q %v", refused.Message, refused.Extensions)
	}
	conflict := presentError(ctx, &payments.StateConflictError{Operation: payments.OpCancel, Status: payments.StatusAuthorized,
		PendingOperation: payments.OpCapture})
	if conflict.Extensions["code"] != "PAYMENT_STATE_CONFLICT" || conflict.Extensions["status"] != "AUTHORIZED" ||
		conflict.Extensions["pendingOperation"] != "CAPTURE_PAYMENT" {
		t.Errorf("conflict: %q %v", conflict.Message, conflict.Extensions)
	}
}

// BenchmarkPresentKeyReused: what presenting the commonest domain error,
// a key reused for another payload, costs a GraphQL response.
func BenchmarkPresentKeyReused(b *testing.B) {
	ctx := context.Background()
	err := fmt.Errorf("create payment: %w", &payments.KeyReusedError{PaymentID: "pay_01KBQX0M3S7T2F8X9V4W5Y6Z7A",
		Operation: payments.OpCreate, DifferingFields: []string{"amount"}})
	b.ReportAllocs()
	for b.Loop() {
		if e := presentError(ctx, err); e.Extensions["code"] != "IDEMPOTENCY_KEY_REUSED" {
			b.Fatalf("%q %v", e.Message, e.Extensions)
		}
	}
}
