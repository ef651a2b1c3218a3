package payments

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
)

// A sandbox payment with work in flight at the processor, left by a
// server configured for Stripe (which sends a sandbox payment's changes
// the phased way), is not changed by a sandbox server's batch statements
// meanwhile: a cancel meets the pending capture, a refund meets the
// reserved amount, as on the Stripe server itself; then the work in flight
// settles, and of a capture and a cancel one wins, refunds never exceed
// the capture.
func TestBatchChangesMeetWorkInFlight(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		conn, _ := doubledStripe(t)
		cfg := Config{ProcessorTimeout: time.Second, RecoveryAfter: time.Second}
		sb, err := NewService(db.Gorm, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Processor = conn
		st, err := NewService(db.Gorm, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		create := func(key string, capture bool) Payment {
			res, err := sb.Create(ctx, CreateRequest{ClientID: "c", IdempotencyKey: key, Amount: "10", Currency: "BRL",
				Method: MethodCreditCard, Capture: &capture, Origin: Origin{Transport: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Payment
		}
		// phase1 stores cmd on the Stripe server as its request would,
		// without asking yet.
		phase1 := func(build func() (*command, error)) started {
			cmd, err := build()
			if err != nil {
				t.Fatal(err)
			}
			var st1 started
			if err := st.store.db().Tx(ctx, func(r sqlq.Runner) error {
				st1, err = st.startChange(ctx, r, cmd)
				return err
			}); err != nil || st1.err != nil {
				t.Fatalf("phase 1: %v, %v", err, st1.err)
			}
			return st1
		}

		auth := create("inflight-a", false)
		capture := phase1(CaptureRequest{PaymentID: auth.ID, IdempotencyKey: "a-capture", Origin: Origin{Transport: "test"}}.command)
		_, err = sb.Cancel(ctx, CancelRequest{PaymentID: auth.ID, IdempotencyKey: "a-cancel", Origin: Origin{Transport: "test"}})
		var conflict *StateConflictError
		if !errors.As(err, &conflict) || conflict.PendingOperation != OpCapture {
			t.Fatalf("cancel beside a pending capture: %v, want a conflict naming the capture", err)
		}
		if res, err := st.askChange(ctx, capture); err != nil || res.Payment.Status != StatusCaptured {
			t.Fatalf("the capture's answer: %s, %v", res.Payment.Status, err)
		}
		var types []string
		if err := db.Gorm.Table("payment_events").Where("payment_id = ?", auth.ID).Order("seq").Pluck("type", &types).Error; err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(types, []string{"PAYMENT_CREATED", "PAYMENT_CAPTURED"}) {
			t.Errorf("events %q, want created then captured", types)
		}

		paid := create("inflight-p", true)
		refund := phase1(RefundRequest{PaymentID: paid.ID, IdempotencyKey: "p-refund", Origin: Origin{Transport: "test"}}.command)
		_, err = sb.Refund(ctx, RefundRequest{PaymentID: paid.ID, IdempotencyKey: "p-refund-2", Origin: Origin{Transport: "test"}})
		var exceeds *AmountExceedsError
		if !errors.As(err, &exceeds) || exceeds.Available.Minor != 0 {
			t.Fatalf("refund of all beside a reserved refund of all: %v, want nothing available", err)
		}
		res, err := st.askChange(ctx, refund)
		if err != nil || res.Payment.Status != StatusRefunded || res.Payment.Refunded.Minor != 1000 || res.Payment.Reserved.Minor != 0 {
			t.Fatalf("the refund's answer: %+v, %v", res.Payment, err)
		}
	})
}
