package payments_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// answer is a capture's or cancel's answer as a client sees it: the
// payment's status and captured amount, or the refusal's code; and
// whether it was a replay.
func answer(res payments.ChangeResult, err error) (string, bool) {
	var refused *payments.ProcessorRefusedError
	switch {
	case errors.As(err, &refused):
		return "PROCESSOR_REFUSED " + refused.Code, refused.Replayed
	case err != nil:
		return "error: " + err.Error(), false
	}
	return fmt.Sprintf("%s %s pending %q", res.Payment.Status, res.Payment.Captured, res.Payment.PendingOperation), res.Replayed
}

// wantOneAnswer asks do twice with one key, after applying what the
// double says of the payment's intent between the two, and checks that
// both answers are want, the second a replay.
func wantOneAnswer(t *testing.T, b *bundle, d *stripedouble.Double, p payments.Payment, want string,
	do func() (payments.ChangeResult, error)) {
	t.Helper()
	first, replayed := answer(do())
	if first != want || replayed {
		t.Errorf("first answer %q (replayed %v), want %q", first, replayed, want)
	}
	applyEvents(t, b, d, p.ProcessorReference, 1)
	again, replayed := answer(do())
	if again != want || !replayed {
		t.Errorf("the replay answers %q (replayed %v), the first answered %q; want %q both", again, replayed, first, want)
	}
}

// A request whose own call left its capture unknown, and whose operation
// another party's word (recovery, once the request's lease ran out: a
// server paused between its call and its record) settled meanwhile,
// answers as that operation was settled: the answer every replay of its
// key gives. Here the intent was canceled at Stripe, so the capture is
// refused, first and on every replay.
func TestChangeSettledMeanwhileAnswersAsItsKeyWill(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var b *bundle
		var armed atomic.Bool
		b, d := stripeWith(t, db, stripeOpts{OnProcessorCall: func(op payments.Operation, o payments.CallOutcome, _ time.Duration) {
			// The request's call came to nothing known: before it records
			// that, its lease runs out and recovery settles the capture.
			if (op != payments.OpCapture && op != payments.OpCancel) || o != payments.CallUnknown || !armed.CompareAndSwap(true, false) {
				return
			}
			b.clock.Advance(time.Minute)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Error(err)
			}
		}})
		for _, op := range []payments.Operation{payments.OpCapture, payments.OpCancel} {
			t.Run(string(op), func(t *testing.T) {
				p := stripeCard(t, b, "create "+string(op), false)
				if err := d.ExpireAuthorization(p.ProcessorReference); err != nil {
					t.Fatal(err)
				}
				ep, want := stripedouble.CapturePaymentIntent, "PROCESSOR_REFUSED payment_canceled"
				if op == payments.OpCancel {
					// A cancel of an intent canceled already is the cancel done.
					ep, want = stripedouble.CancelPaymentIntent, `CANCELED 0.00 pending ""`
				}
				d.FailNext(ep, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
				armed.Store(true)
				key := "meanwhile " + string(op)
				wantOneAnswer(t, b, d, p, want, func() (payments.ChangeResult, error) {
					if op == payments.OpCancel {
						return b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: p.ID, IdempotencyKey: key})
					}
					return b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: key})
				})
				if got := b.mustGet(t, p.ID); got.Status != payments.StatusCanceled || got.PendingOperation != "" {
					t.Errorf("payment %s pending %q, want CANCELED as Stripe holds it", got.Status, got.PendingOperation)
				}
			})
		}
	})
}
