// Package deliverytest sets up what the tests of a failed webhook delivery
// kept past its event share (packages events and web): payments, events
// and webhooks over one database, running until the test ends, with the
// events service's clock, which its sweep reads, set ahead at will; and a
// webhook receiver that fails while told to.
package deliverytest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// The events service's retention and WEBHOOK_FAILED_KEEP: a sweep 100 h
// ahead is past the first and within the second.
const (
	Retention  = 73 * time.Hour
	FailedKeep = 168 * time.Hour
)

// Env is the services of one test, with a Receiver for its endpoints,
// which the test creates.
type Env struct {
	DB       dbtest.DB
	Events   *events.Service
	Payments *payments.Service
	Webhooks *webhooks.Service
	Receiver *Receiver
	// ahead is how far the events service's clock runs ahead.
	ahead atomic.Int64
}

// New starts the services over db until the test ends. Deliveries are
// retried every 50 ms at first, for maxAge (WEBHOOK_MAX_AGE): short, so
// that a failing one fails soon, but long enough that a resent one is
// still tried on a loaded machine.
func New(t *testing.T, db dbtest.DB, maxAge time.Duration) *Env {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	e := &Env{DB: db, Receiver: newReceiver(t)}
	var err error
	e.Events, err = events.New(db.Gorm, events.Options{Retention: Retention, FailedKeep: FailedKeep, SweepInterval: time.Hour,
		Poll: 50 * time.Millisecond, Logger: quiet,
		Now: func() time.Time { return time.Now().Add(time.Duration(e.ahead.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	e.Payments, err = payments.NewService(db.Gorm, payments.Config{
		OnAttempt: func(payments.Operation, payments.Outcome, string) { e.Events.Wake() }})
	if err != nil {
		t.Fatal(err)
	}
	e.Webhooks, err = webhooks.New(db.Gorm, e.Events, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond,
		MaxAge: maxAge, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Events.Run(ctx) })
	wg.Go(func() { e.Webhooks.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return e
}

// Create makes a payment of 10.00 BRL by Pix for client under key, and
// returns its id.
func (e *Env) Create(t *testing.T, client, key string) string {
	t.Helper()
	res, err := e.Payments.Create(t.Context(), payments.CreateRequest{ClientID: client, IdempotencyKey: key, Amount: "10.00",
		Currency: "BRL", Method: payments.MethodPix, Origin: payments.Origin{Transport: "test"}})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return res.Payment.ID
}

// Sweep runs the events sweep with its clock ahead by d.
func (e *Env) Sweep(t *testing.T, d time.Duration) {
	t.Helper()
	e.ahead.Store(int64(d))
	defer e.ahead.Store(0)
	if _, err := e.Events.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// EventsLeft lists the events left, oldest first.
func (e *Env) EventsLeft(t *testing.T) []events.Event {
	t.Helper()
	evs, err := e.Events.Since(t.Context(), 0, events.Filter{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// Receiver is a webhook receiver that keeps every request it is sent and
// answers 500 to those on a path beginning /fail while Failing is set, 204
// to the others.
type Receiver struct {
	// URL is where it listens: endpoints are URL + a path.
	URL     string
	Failing atomic.Bool
	mu      sync.Mutex
	got     []Received
}

// Received is one request a Receiver was sent.
type Received struct {
	Path               string
	Body               []byte
	Signature, EventID string
}

func newReceiver(t *testing.T) *Receiver {
	r := &Receiver{}
	r.Failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, Received{Path: req.URL.Path, Body: body, Signature: req.Header.Get(webhooks.HeaderSignature),
			EventID: req.Header.Get(webhooks.HeaderEventID)})
		r.mu.Unlock()
		if strings.HasPrefix(req.URL.Path, "/fail") && r.Failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Sent is every request received, in order.
func (r *Receiver) Sent() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Of is the requests received for the event id, in order.
func (r *Receiver) Of(eventID int64) []Received {
	id := strconv.FormatInt(eventID, 10)
	var out []Received
	for _, got := range r.Sent() {
		if got.EventID == id {
			out = append(out, got)
		}
	}
	return out
}

// Poll waits for cond, polled for up to 10 s.
func Poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
