package stripe

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// TestRequestShapesAgainstStripeMock sends each of the connector's
// requests to Stripe's own stripe-mock, which checks parameters against
// Stripe's OpenAPI description and answers 400 to any it does not know.
// stripe-mock is stateless and ignores keys, so only the shapes are
// checked here. It runs when CMPAY_STRIPE_MOCK_URL names a running one:
//
//	go install github.com/stripe/stripe-mock@v0.203.0 && stripe-mock -http-port 12111 &
//	CMPAY_STRIPE_MOCK_URL=http://127.0.0.1:12111 go test ./processor/stripe -run StripeMock
func TestRequestShapesAgainstStripeMock(t *testing.T) {
	base := os.Getenv("CMPAY_STRIPE_MOCK_URL")
	if base == "" {
		t.Skip("CMPAY_STRIPE_MOCK_URL is not set")
	}
	cfg := processor.DefaultConfig()
	cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "sk_test_123", base, 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseIdleConnections()
	ctx := context.Background()
	steps := map[string]func() error{
		"create card manual": func() error {
			return second(conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", false)))
		},
		"create card": func() error {
			return second(conn.CreatePayment(ctx, cardReq("cmpay_2", "pay_2", "pm_card_visa", true)))
		},
		"create pix": func() error {
			return second(conn.CreatePayment(ctx, processor.CreatePaymentRequest{IdempotencyKey: "cmpay_3", PaymentID: "pay_3",
				AmountMinor: 1050, Currency: "BRL", Method: processor.MethodPix, Capture: true}))
		},
		"create boleto": func() error {
			return second(conn.CreatePayment(ctx, processor.CreatePaymentRequest{IdempotencyKey: "cmpay_4", PaymentID: "pay_4",
				AmountMinor: 1050, Currency: "BRL", Method: processor.MethodBoleto, PaymentMethodToken: "pm_123", Capture: true}))
		},
		"capture": func() error {
			return second(conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_5", Reference: "pi_123", AmountMinor: 100, Currency: "BRL"}))
		},
		"cancel": func() error {
			return second(conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_6", Reference: "pi_123"}))
		},
		"refund": func() error {
			return second(conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_7", PaymentReference: "pi_123", RefundID: "ref_7", AmountMinor: 100, Currency: "BRL"}))
		},
		"get":          func() error { return second(conn.GetPayment(ctx, "pi_123")) },
		"search":       func() error { return second(conn.FindPayments(ctx, "pay_1")) },
		"get refund":   func() error { return second(conn.GetRefund(ctx, "re_123")) },
		"list refunds": func() error { return second(conn.ListRefunds(ctx, "pi_123")) },
	}
	for name, step := range steps {
		if err := step(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
