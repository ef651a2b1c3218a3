package events_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
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
		failed1, failed2 := e.create(t, "shop-fail", "keep-1"), e.create(t, "shop-fail", "keep-2")
		e.made(t, 2)
		delivered := e.create(t, "shop-ok", "keep-3")
		e.made(t, 3)
		newest := e.create(t, "shop-ok", "keep-4")
		e.made(t, 4)
		want := map[string]string{failed1: "FAILED", failed2: "FAILED", delivered: "DELIVERED", newest: "DELIVERED"}
		waitUntil(t, "the deliveries to fail or be delivered", func() bool {
			for p, d := range e.byPayment(t) {
				if d.Status != want[p] {
					return false
				}
			}
			return true
		})

		// 100 h on: past the retention (73 h), within the keep (168 h).
		e.sweep(t, 100*time.Hour)
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
		if d, err := e.wh.Delivery(t.Context(), left[failed1].ID); err != nil || d.EventType != string(payments.EventCreated) {
			t.Errorf("a kept delivery whose event is swept shows type %q (%v); want %s", d.EventType, err, payments.EventCreated)
		}

		// The endpoint works again; the payment changes; support resends.
		e.rcv.failing.Store(false)
		if _, err := e.pay.Refund(t.Context(), payments.RefundRequest{PaymentID: failed1, Amount: ptr("2.50"),
			IdempotencyKey: "keep-refund", Origin: origin}); err != nil {
			t.Fatal(err)
		}
		d1 := left[failed1]
		if err := e.wh.Resend(t.Context(), d1.ID, nil); err != nil {
			t.Fatalf("resend after 100 h: %v", err)
		}
		waitUntil(t, "the resent delivery and the refund's", func() bool {
			var ok int64
			db.Gorm.Model(&models.WebhookDelivery{}).Where("payment_id = ? AND status = ?", failed1, "DELIVERED").Count(&ok)
			return ok == 2
		})
		sent := e.rcv.of(strconv.FormatInt(d1.EventID, 10))
		switch {
		case len(sent) < 2:
			t.Errorf("the event was sent %d times; want its failed attempts and the resend", len(sent))
		case string(sent[len(sent)-1]) != string(sent[0]):
			t.Errorf("the resend sent another body than the first attempt:\nfirst  %s\nresent %s", sent[0], sent[len(sent)-1])
		}

		// 269 h on: past the keep of the one still FAILED.
		e.sweep(t, 269*time.Hour)
		if left := e.byPayment(t); len(left) != 0 {
			t.Errorf("deliveries after 269 h: %v; want none", left)
		}
		if got, want := e.events(t), []string{failed1 + " " + string(payments.EventRefunded)}; !slices.Equal(got, want) {
			t.Errorf("events after 269 h: %v; want only the newest %v", got, want)
		}
	})
}

// keepEnv is payments, events and webhooks over one database, with one
// endpoint for the client shop-fail (whose receiver fails while told to)
// and one for shop-ok; the events service's clock, which the sweep reads,
// may be set ahead.
type keepEnv struct {
	db    dbtest.DB
	ahead atomic.Int64
	ev    *events.Service
	pay   *payments.Service
	wh    *webhooks.Service
	rcv   *bodies
}

func newKeepEnv(t *testing.T, db dbtest.DB) *keepEnv {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	e := &keepEnv{db: db, rcv: newBodies(t)}
	var err error
	e.ev, err = events.New(db.Gorm, events.Options{Retention: 73 * time.Hour, FailedKeep: 168 * time.Hour, SweepInterval: time.Hour,
		Poll: 100 * time.Millisecond, Logger: quiet,
		Now: func() time.Time { return time.Now().Add(time.Duration(e.ahead.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	e.pay, err = payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { e.ev.Wake() }})
	if err != nil {
		t.Fatal(err)
	}
	e.wh, err = webhooks.New(db.Gorm, e.ev, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond,
		MaxAge: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	run(t, e.ev)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.wh.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for client, path := range map[string]string{"shop-fail": "/fail", "shop-ok": "/ok"} {
		if _, _, err := e.wh.CreateEndpoint(t.Context(), client, e.rcv.srv.URL+path, nil); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *keepEnv) create(t *testing.T, client, key string) string {
	t.Helper()
	res, err := e.pay.Create(t.Context(), payments.CreateRequest{ClientID: client, IdempotencyKey: key, Amount: "10.00",
		Currency: "BRL", Method: payments.MethodPix, Origin: origin})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return res.Payment.ID
}

// byPayment is each payment's first delivery (its PAYMENT_CREATED's).
func (e *keepEnv) byPayment(t *testing.T) map[string]models.WebhookDelivery {
	t.Helper()
	var rows []models.WebhookDelivery
	if err := e.db.Gorm.Order("id").Find(&rows).Error; err != nil {
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
	waitUntil(t, "the deliveries", func() bool { return len(e.byPayment(t)) == n })
}

// sweep runs the events sweep with its clock ahead by d.
func (e *keepEnv) sweep(t *testing.T, d time.Duration) {
	t.Helper()
	e.ahead.Store(int64(d))
	defer e.ahead.Store(0)
	if _, err := e.ev.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// events lists the events left, as "payment type".
func (e *keepEnv) events(t *testing.T) []string {
	t.Helper()
	evs, err := e.ev.Since(t.Context(), 0, events.Filter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Payment.ID+" "+string(ev.Type))
	}
	return out
}

// bodies is a webhook receiver that keeps every body it is sent, by event
// id, and answers 500 on /fail while failing is set, 204 otherwise.
type bodies struct {
	srv     *httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	byEvent map[string][][]byte
}

func newBodies(t *testing.T) *bodies {
	b := &bodies{byEvent: map[string][][]byte{}}
	b.failing.Store(true)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		id := r.Header.Get(webhooks.HeaderEventID)
		b.byEvent[id] = append(b.byEvent[id], body)
		b.mu.Unlock()
		if r.URL.Path == "/fail" && b.failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// of is what was sent for the event id, in order.
func (b *bodies) of(eventID string) [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.byEvent[eventID])
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
