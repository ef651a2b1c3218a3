package apierror_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/payments"
)

// The processor's errors map to the codes, statuses and details the
// contract names, however deeply they are wrapped.
func TestProcessorErrors(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		err     error
		code    string
		status  int
		details map[string]any
	}{
		{"refused", fmt.Errorf("capture p1: %w", &payments.ProcessorRefusedError{Operation: payments.OpCapture, PaymentID: "p1", Code: "charge_expired_for_capture"}),
			apierror.ProcessorRefused, http.StatusPaymentRequired, map[string]any{"processorCode": "charge_expired_for_capture", "paymentId": "p1"}},
		{"refused without a code", &payments.ProcessorRefusedError{Operation: payments.OpRefund, PaymentID: "p1"},
			apierror.ProcessorRefused, http.StatusPaymentRequired, map[string]any{"processorCode": nil, "paymentId": "p1"}},
		{"conflict with a pending capture", fmt.Errorf("cancel p1: %w", &payments.StateConflictError{Operation: payments.OpCancel, Status: payments.StatusAuthorized, PendingOperation: payments.OpCapture}),
			apierror.StateConflict, http.StatusConflict, map[string]any{"status": "AUTHORIZED", "pendingOperation": "CAPTURE_PAYMENT"}},
		{"conflict with nothing pending", &payments.StateConflictError{Operation: payments.OpCapture, Status: payments.StatusDeclined},
			apierror.StateConflict, http.StatusConflict, map[string]any{"status": "DECLINED"}},
		{"the payment's processor not configured here", fmt.Errorf("refund p1: %w", &payments.ProcessorUnavailableError{Processor: "stripe"}),
			apierror.Unavailable, http.StatusServiceUnavailable, nil},
	} {
		e := apierror.FromDomain(ctx, tt.err)
		if e.Code != tt.code || e.Status != tt.status || !reflect.DeepEqual(e.Details, tt.details) || e.Message == "" {
			t.Errorf("%s: %+v, want %s %d %v", tt.name, e, tt.code, tt.status, tt.details)
		}
	}
}

// A decline names the payment and the processor's code; REST answers it 402.
func TestDeclined(t *testing.T) {
	e := apierror.Declined(payments.Payment{ID: "p1", Status: payments.StatusDeclined, DeclineCode: "insufficient_funds"})
	want := map[string]any{"paymentId": "p1", "declineCode": "insufficient_funds"}
	if e.Code != apierror.PaymentDeclined || e.Status != http.StatusPaymentRequired || !reflect.DeepEqual(e.Details, want) {
		t.Errorf("Declined: %+v", e)
	}
	if e := apierror.Declined(payments.Payment{ID: "p2", Status: payments.StatusDeclined}); e.Details["declineCode"] != nil {
		t.Errorf("a decline without a code: %+v, want declineCode null", e.Details)
	}
}
