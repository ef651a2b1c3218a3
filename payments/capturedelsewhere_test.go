package payments_test

import (
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// eventKeys lists a payment's events as "TYPE key", oldest first.
func (b *bundle) eventKeys(t *testing.T, paymentID string) []string {
	t.Helper()
	var rows []struct{ Type, IdempotencyKey string }
	if err := b.db.Gorm.Table("payment_events").Select("type, idempotency_key").Where("payment_id = ?", paymentID).
		Order("seq").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Type+" "+r.IdempotencyKey)
	}
	return out
}

// A capture that meets its PaymentIntent captured by another party (Stripe's
// dashboard) for the amount it asks is the capture done, answered so under
// its key every time; for another amount it is refused, and every replay
// of its key answers that refusal. Either way the payment is what Stripe
// holds and money moved once; a capture CMPay did not make is announced
// under the payment's own key.
func TestCaptureOfAnIntentCapturedElsewhere(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		capture := func(p payments.Payment, key string, amount *string) func() (payments.ChangeResult, error) {
			return func() (payments.ChangeResult, error) {
				return b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: key, Amount: amount})
			}
		}
		for _, c := range []struct {
			name      string
			elsewhere int64   // what the dashboard captures (0: all)
			amount    *string // what CMPay's capture asks (nil: all)
			want      string
			wantKey   bool // the capture's event is under the capture's key
		}{
			{"all, all", 0, nil, `CAPTURED 10.50 pending ""`, true},
			{"part, the same part", 400, new("4"), `CAPTURED 4.00 pending ""`, true},
			{"part, all", 400, nil, "PROCESSOR_REFUSED payment_captured", false},
			{"all, part", 0, new("4"), "PROCESSOR_REFUSED payment_captured", false},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := stripeCard(t, b, "create "+c.name, false)
				if err := d.CaptureFromDashboard(p.ProcessorReference, c.elsewhere); err != nil {
					t.Fatal(err)
				}
				key := "capture " + c.name
				wantOneAnswer(t, b, d, p, c.want, capture(p, key, c.amount))
				got := b.mustGet(t, p.ID)
				l := d.Ledger(p.ProcessorReference)
				if got.Status != payments.StatusCaptured || got.Captured.Minor != l.Captured || l.Captures != 1 {
					t.Errorf("CMPay %s %s; Stripe's ledger %+v", got.Status, got.Captured, l)
				}
				wantEvent := "PAYMENT_CAPTURED " + p.IdempotencyKey
				if c.wantKey {
					wantEvent = "PAYMENT_CAPTURED " + key
				}
				if ev := b.eventKeys(t, p.ID); len(ev) != 2 || ev[1] != wantEvent {
					t.Errorf("events %q, want the create's and %q", ev, wantEvent)
				}
			})
		}
	})
}

// Recovery judges a capture that meets its intent captured for another
// amount as the request would: refused, by asking again under its key or
// by reading the intent (after a 500 Stripe stored under the key), and the
// key's replays answer that refusal.
func TestRecoveryRefusesACaptureOfAnotherAmount(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		for _, fault := range []stripedouble.FaultKind{stripedouble.ServerErrorBefore, stripedouble.ServerErrorStored} {
			t.Run(fault.String(), func(t *testing.T) {
				p := stripeCard(t, b, "create "+fault.String(), false)
				d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: fault})
				capture := func() (payments.ChangeResult, error) {
					return b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "capture " + fault.String()})
				}
				if got, _ := answer(capture()); got != `AUTHORIZED 0.00 pending "CAPTURE_PAYMENT"` {
					t.Fatalf("capture: %s, want it pending", got)
				}
				if err := d.CaptureFromDashboard(p.ProcessorReference, 400); err != nil {
					t.Fatal(err)
				}
				got := recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
				if got.Status != payments.StatusCaptured || got.Captured.Minor != 400 {
					t.Errorf("after recovery: %s %s, want CAPTURED 4.00 as Stripe holds it", got.Status, got.Captured)
				}
				if again, replayed := answer(capture()); again != "PROCESSOR_REFUSED payment_captured" || !replayed {
					t.Errorf("the replay: %s (replayed %v), want PROCESSOR_REFUSED payment_captured", again, replayed)
				}
				if ev := b.eventKeys(t, p.ID); len(ev) != 2 || ev[1] != "PAYMENT_CAPTURED "+p.IdempotencyKey {
					t.Errorf("events %q, want the dashboard's capture under the payment's own key", ev)
				}
			})
		}
	})
}
