package stripe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

// setup starts a double and a connector (the real stripe-go client) on it.
func setup(t testing.TB, opts stripedouble.Options) (*Connector, *stripedouble.Double, *stripedouble.ManualClock) {
	t.Helper()
	c := stripedouble.NewManualClock(time.Now().UTC().Truncate(time.Second))
	opts.Clock = c.Now
	d := stripedouble.New(opts)
	t.Cleanup(d.Close)
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "stripe", "sk_test_double", d.URL(), 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	return conn, d, c
}

// short is the deadline for calls that are meant to time out.
func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func cardReq(key, paymentID, token string, capture bool) processor.CreatePaymentRequest {
	return processor.CreatePaymentRequest{IdempotencyKey: key, PaymentID: paymentID, AmountMinor: 1050,
		Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: token, Capture: capture}
}

// unknown says whether err leaves a call's outcome unknown, as the engine
// judges it (payments/operations.go, errorOutcome): a *processor.Error
// whose Known is false, or any other error.
func unknown(err error) bool {
	var pe *processor.Error
	return err != nil && (!errors.As(err, &pe) || !pe.Known())
}

func asError(t *testing.T, err error) *processor.Error {
	t.Helper()
	var pe *processor.Error
	if !errors.As(err, &pe) {
		t.Fatalf("not a *processor.Error: %v", err)
	}
	return pe
}
