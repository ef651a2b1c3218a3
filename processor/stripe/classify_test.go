package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// TestKeyInUseIsInProgress: Stripe answers a request whose key's first
// request still executes with a 409 of type idempotency_error, the type of
// a key reused with other parameters too (a 400). The 409 must stay unknown
// and in progress, so that recovery asks again with the key, whatever the
// type; only the 400 is a mismatch. Sent through stripe-go, as Stripe's
// answer would be.
func TestKeyInUseIsInProgress(t *testing.T) {
	cases := []struct {
		status int
		typ    string
		want   processor.Kind
	}{
		{http.StatusConflict, "idempotency_error", processor.KindInProgress},
		{http.StatusConflict, "invalid_request_error", processor.KindInProgress},
		{http.StatusBadRequest, "idempotency_error", processor.KindIdempotencyMismatch},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d %s", c.status, c.typ), func(t *testing.T) {
			checkWriteKinds(t, c.status, c.typ, "idempotency_key_in_use", c.want)
		})
	}
}

// TestUndocumentedStatusIsUnknown: only a 400, a 402 and a 404 on a write
// say that Stripe did nothing with a write; any other 4xx (a proxy's 405,
// 408 or 413, or a status Stripe adds later) must stay unknown, so that a
// refund that was made is not released and a charge not declined.
func TestUndocumentedStatusIsUnknown(t *testing.T) {
	cases := []struct {
		status int
		typ    string
		want   processor.Kind
	}{
		{http.StatusBadRequest, "invalid_request_error", processor.KindInvalidRequest},
		{http.StatusNotFound, "invalid_request_error", processor.KindInvalidRequest},
		{http.StatusMethodNotAllowed, "invalid_request_error", processor.KindBadResponse},
		{http.StatusRequestTimeout, "api_error", processor.KindBadResponse},
		{http.StatusRequestEntityTooLarge, "invalid_request_error", processor.KindBadResponse},
		{http.StatusUnprocessableEntity, "invalid_request_error", processor.KindBadResponse},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d %s", c.status, c.typ), func(t *testing.T) {
			checkWriteKinds(t, c.status, c.typ, "some_code", c.want)
		})
	}
}

// checkWriteKinds answers each of the four writes, sent through stripe-go,
// with status and an error of type typ and code, and checks the kind the
// connector reads in it.
func checkWriteKinds(t *testing.T, status int, typ, code string, want processor.Kind) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"type":%q,"code":%q,"message":"refused"}}`, typ, code)
	}))
	defer srv.Close()
	cfg := processor.DefaultConfig()
	cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "sk_test_123", srv.URL, 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseIdleConnections()
	ctx := context.Background()
	calls := map[string]func() error{
		"create": func() error {
			return second(conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", true)))
		},
		"capture": func() error {
			return second(conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_2", Reference: "pi_1",
				AmountMinor: 100, Currency: "BRL"}))
		},
		"cancel": func() error {
			return second(conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_3", Reference: "pi_1"}))
		},
		"refund": func() error {
			return second(conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_4", PaymentReference: "pi_1",
				RefundID: "ref_1", AmountMinor: 100, Currency: "BRL"}))
		},
	}
	for name, call := range calls {
		var pe *processor.Error
		if err := call(); !errors.As(err, &pe) || pe.Kind != want {
			t.Errorf("%s: %v, want kind %s", name, err, want)
		}
	}
}
