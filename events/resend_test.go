package events_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/deliverytest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// TestFailedDeliveryResentAfterRetention: with the default settings but a
// 1 s WEBHOOK_MAX_AGE and a WEBHOOK_FAILED_KEEP of 168 h, deliveries that
// failed are kept, with their attempts and the body they sent, past the
// retention (the sweep's clock 100 h ahead), while a delivered one of the
// same age goes, and so do their events: a FAILED delivery with a body
// needs none. A resend then delivers the body of the first attempt, as of
// its event, though the payment was refunded since and the event is gone.
// Past WEBHOOK_FAILED_KEEP (269 h ahead) a failed delivery goes, and the
// resent one, delivered, goes as any other.
func TestFailedDeliveryResentAfterRetention(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newKeepEnv(t, db)
		// Two payments whose deliveries fail; a third delivered, in a pass
		// of its own; the newest event, which no sweep takes.
		failed1, failed2 := e.Create(t, "shop-fail", "keep-1"), e.Create(t, "shop-fail", "keep-2")
		e.made(t, 2)
		delivered := e.Create(t, "shop-ok", "keep-3")
		e.made(t, 3)
		newest := e.Create(t, "shop-ok", "keep-4")
		e.made(t, 4)
		want := map[string]string{failed1: "FAILED", failed2: "FAILED", delivered: "DELIVERED", newest: "DELIVERED"}
		deliverytest.Poll(t, "the deliveries to fail or be delivered", func() bool {
			for p, d := range e.byPayment(t) {
				if d.Status != want[p] {
					return false
				}
			}
			return true
		})

		// 100 h on: past the retention (73 h), within the keep (168 h).
		e.Sweep(t, 100*time.Hour)
		left := e.byPayment(t)
		for _, p := range []string{failed1, failed2} {
			d, ok := left[p]
			var attempts int64
			db.Gorm.Model(&models.WebhookAttempt{}).Where("delivery_id = ?", d.ID).Count(&attempts)
			if !ok || d.Status != "FAILED" || attempts == 0 || attempts != int64(d.Attempts) {
				t.Errorf("failed delivery of %s after 100 h: kept %v, %s, %d attempts logged of %d", p, ok, d.Status, attempts, d.Attempts)
			}
		}
		if _, ok := left[delivered]; ok {
			t.Errorf("the delivered delivery of %s is kept after 100 h", delivered)
		}
		created := " " + string(payments.EventCreated)
		if got, want := e.events(t), []string{newest + created}; !sameSet(got, want) {
			t.Errorf("events after 100 h: %v; want %v", got, want)
		}

		// The admin still shows what the delivery was, from its body.
		if d, err := e.Webhooks.Delivery(t.Context(), left[failed1].ID); err != nil || d.EventType != string(payments.EventCreated) {
			t.Errorf("a kept delivery whose event is swept shows type %q (%v); want %s", d.EventType, err, payments.EventCreated)
		}

		// The endpoint works again; the payment changes; support resends.
		e.Receiver.Failing.Store(false)
		if _, err := e.Payments.Refund(t.Context(), payments.RefundRequest{PaymentID: failed1, Amount: ptr("2.50"),
			IdempotencyKey: "keep-refund", Origin: origin}); err != nil {
			t.Fatal(err)
		}
		d1 := left[failed1]
		if err := e.Webhooks.Resend(t.Context(), d1.ID, nil); err != nil {
			t.Fatalf("resend after 100 h: %v", err)
		}
		deliverytest.Poll(t, "the resent delivery and the refund's", func() bool {
			var ok int64
			db.Gorm.Model(&models.WebhookDelivery{}).Where("payment_id = ? AND status = ?", failed1, "DELIVERED").Count(&ok)
			return ok == 2
		})
		sent := e.Receiver.Of(d1.EventID)
		switch {
		case len(sent) < 2:
			t.Errorf("the event was sent %d times; want its failed attempts and the resend", len(sent))
		case string(sent[len(sent)-1].Body) != string(sent[0].Body):
			t.Errorf("the resend sent another body than the first attempt:\nfirst  %s\nresent %s", sent[0].Body, sent[len(sent)-1].Body)
		}

		// 269 h on: past the keep of the one still FAILED.
		e.Sweep(t, 269*time.Hour)
		if left := e.byPayment(t); len(left) != 0 {
			t.Errorf("deliveries after 269 h: %v; want none", left)
		}
		if got, want := e.events(t), []string{failed1 + " " + string(payments.EventRefunded)}; !slices.Equal(got, want) {
			t.Errorf("events after 269 h: %v; want only the newest %v", got, want)
		}
	})
}

// keepEnv is the services of deliverytest, with one endpoint for the
// client shop-fail (whose receiver fails while told to) and one for
// shop-ok.
type keepEnv struct{ *deliverytest.Env }

func newKeepEnv(t *testing.T, db dbtest.DB) *keepEnv {
	t.Helper()
	e := &keepEnv{deliverytest.New(t, db, time.Second)}
	for client, path := range map[string]string{"shop-fail": "/fail", "shop-ok": "/ok"} {
		if _, _, err := e.Webhooks.CreateEndpoint(t.Context(), client, e.Receiver.URL+path, nil); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// byPayment is each payment's first delivery (its PAYMENT_CREATED's).
func (e *keepEnv) byPayment(t *testing.T) map[string]models.WebhookDelivery {
	t.Helper()
	var rows []models.WebhookDelivery
	if err := e.DB.Gorm.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]models.WebhookDelivery{}
	for _, d := range rows {
		if _, ok := out[d.EventPaymentID]; !ok {
			out[d.EventPaymentID] = d
		}
	}
	return out
}

// made waits until n payments have their deliveries: their events are
// numbered, and the next payment's event will be in another pass.
func (e *keepEnv) made(t *testing.T, n int) {
	t.Helper()
	deliverytest.Poll(t, "the deliveries", func() bool { return len(e.byPayment(t)) == n })
}

// events lists the events left, as "payment type".
func (e *keepEnv) events(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, ev := range e.EventsLeft(t) {
		out = append(out, ev.Payment.ID+" "+string(ev.Type))
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
