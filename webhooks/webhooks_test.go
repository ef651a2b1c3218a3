package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

var quiet = slog.New(slog.DiscardHandler)

// env is payments, events and webhooks over one database, running until
// the test ends.
type env struct {
	db  dbtest.DB
	pay *payments.Service
	ev  *events.Service
	wh  *webhooks.Service
}

func newEnv(t testing.TB, db dbtest.DB, cfg webhooks.Config) *env {
	t.Helper()
	ev, err := events.New(db.Gorm, events.Options{Logger: quiet, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pay, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = quiet
	wh, err := webhooks.New(db.Gorm, ev, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, pay: pay, ev: ev, wh: wh}
	run(t, ev.Run)
	waitFor(t, 10*time.Second, "the events leader", ev.Leader)
	return e
}

// run runs f until the test ends.
func run(t testing.TB, f func(context.Context)) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return cancel
}

func (e *env) create(t testing.TB, client, key string) payments.Payment {
	t.Helper()
	res, err := e.pay.Create(context.Background(), payments.CreateRequest{ClientID: client, IdempotencyKey: key, Amount: "10.00",
		Currency: "BRL", Method: payments.MethodPix, Origin: payments.Origin{Transport: "test"}})
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	return res.Payment
}

// receiver is a webhook endpoint under test: it checks every delivery's
// signature and headers, answers 500 to the first failFirst of them, and
// counts what it accepted by event id.
type receiver struct {
	t         testing.TB
	srv       *httptest.Server
	secret    atomic.Pointer[string]
	failFirst int64

	mu       sync.Mutex
	calls    int64
	bodies   map[string]webhooks.Body
	accepted map[string]int
	bad      []string
}

func newReceiver(t testing.TB, failFirst int64) *receiver {
	r := &receiver{t: t, failFirst: failFirst, bodies: map[string]webhooks.Body{}, accepted: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	secret := r.secret.Load()
	problem := ""
	var b webhooks.Body
	switch {
	case req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json":
		problem = "method or content type: " + req.Method + " " + req.Header.Get("Content-Type")
	case secret == nil:
		problem = "no secret yet"
	case webhooks.Verify(*secret, req.Header.Get(webhooks.HeaderSignature), body, time.Now(), 5*time.Minute) != nil:
		problem = "bad signature: " + req.Header.Get(webhooks.HeaderSignature)
	case json.Unmarshal(body, &b) != nil:
		problem = "body is not JSON: " + string(body)
	case b.ID != req.Header.Get(webhooks.HeaderEventID):
		problem = "CMPay-Event-Id " + req.Header.Get(webhooks.HeaderEventID) + " but body id " + b.ID
	}
	if problem != "" {
		r.bad = append(r.bad, problem)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.calls <= r.failFirst {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "try again later")
		return
	}
	r.bodies[b.ID] = b
	r.accepted[b.ID]++
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.accepted)
}

// waitFor polls cond for up to d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) deliveries(t testing.TB) []models.WebhookDelivery {
	t.Helper()
	var rows []models.WebhookDelivery
	if err := e.db.Gorm.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestDeliveries: signed deliveries reach the receiver; the first ones
// fail and are retried, then delivered; bodies carry the event as the
// contract says.
func TestDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond})
		rcv := newReceiver(t, 3)
		ep, secret, err := e.wh.CreateEndpoint(t.Context(), "", rcv.srv.URL+"/hooks", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(secret) < 30 || !slices.Equal(ep.Events, payments.EventTypes) {
			t.Fatalf("secret %q, events %v", secret, ep.Events)
		}
		rcv.secret.Store(&secret)
		run(t, e.wh.Run)

		p := e.create(t, "shop-1", "d-1")
		refund, err := e.pay.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, Amount: ptr("2.5"), IdempotencyKey: "d-r",
			Origin: payments.Origin{Transport: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		e.create(t, "shop-2", "d-2")
		waitFor(t, 15*time.Second, "3 events delivered", func() bool { return rcv.distinct() == 3 })
		waitFor(t, 5*time.Second, "3 deliveries recorded", func() bool {
			n := 0
			for _, d := range e.deliveries(t) {
				if d.Status == "DELIVERED" {
					n++
				}
			}
			return n == 3
		})
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if len(rcv.bad) > 0 {
			t.Errorf("bad deliveries: %v", rcv.bad)
		}
		created, refunded := rcv.bodies["1"], rcv.bodies["2"]
		if created.Type != "PAYMENT_CREATED" || created.Data.Payment.ID != p.ID || created.Data.IdempotencyKey != "d-1" ||
			created.Data.Refund != nil || created.Data.Payment.Status != "CAPTURED" || len(created.Data.Payment.Refunds) != 0 {
			t.Errorf("created event body: %+v", created)
		}
		if refunded.Type != "PAYMENT_REFUNDED" || refunded.Data.Refund == nil || refunded.Data.Refund.ID != refund.Refund.ID ||
			refunded.Data.Refund.Amount != "2.50" || refunded.Data.Payment.RefundedAmount != "2.50" ||
			refunded.Data.Payment.Status != "PARTIALLY_REFUNDED" || len(refunded.Data.Payment.Refunds) != 1 ||
			refunded.Data.IdempotencyKey != "d-r" {
			t.Errorf("refund event body: %+v", refunded)
		}
		if _, err := time.Parse(time.RFC3339Nano, created.CreatedAt); err != nil {
			t.Errorf("createdAt %q: %v", created.CreatedAt, err)
		}
		rows := e.deliveries(t)
		attempts := 0
		for _, d := range rows {
			if d.Status != "DELIVERED" || d.LastStatus != http.StatusNoContent || d.DeliveredAt == nil {
				t.Errorf("delivery %d: %s, last %d", d.ID, d.Status, d.LastStatus)
			}
			attempts += d.Attempts
		}
		var logged int64
		db.Gorm.Model(&models.WebhookAttempt{}).Count(&logged)
		if len(rows) != 3 || attempts != 6 || logged != 6 {
			t.Errorf("%d deliveries, %d attempts counted, %d logged; want 3, 6 (3 failed first), 6", len(rows), attempts, logged)
		}
		// The admin's list names each delivery's payment.
		recent, err := e.wh.RecentDeliveries(t.Context(), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range recent {
			if d.EventPaymentID == "" || d.EventType != "PAYMENT_CREATED" && d.EventPaymentID != p.ID {
				t.Errorf("delivery %d of %s names payment %q", d.ID, d.EventType, d.EventPaymentID)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestRetriesEndInFailureAndResend: a delivery never answered with a 2xx is
// retried with growing waits until WEBHOOK_MAX_AGE, then FAILED; a resend
// arms it again once, however often it is clicked.
func TestRetriesEndInFailureAndResend(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond, MaxAge: time.Second})
		rcv := newReceiver(t, 1<<62) // always 500
		_, secret, err := e.wh.CreateEndpoint(t.Context(), "", rcv.srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		rcv.secret.Store(&secret)
		run(t, e.wh.Run)
		e.create(t, "shop-1", "f-1")
		var d models.WebhookDelivery
		waitFor(t, 10*time.Second, "the delivery to fail", func() bool {
			rows := e.deliveries(t)
			if len(rows) == 1 {
				d = rows[0]
			}
			return d.Status == "FAILED"
		})
		// At 0, 50, 150, 350, 750 ms after the event, and the next would be
		// past a second: about 5 attempts, fewer on a busy machine (one when
		// the first comes late in the second), never many more.
		if d.Attempts < 1 || d.Attempts > 7 || d.LastStatus != 500 || d.LastError != "try again later" {
			t.Errorf("failed after %d attempts, last %d %q: %+v", d.Attempts, d.LastStatus, d.LastError, d)
		}
		if err := e.wh.Resend(t.Context(), 999, nil); !errors.Is(err, webhooks.ErrNotFailed) {
			t.Errorf("resend of an unknown delivery: %v", err)
		}
		// The resend and its audit entry commit together: an entry that
		// cannot be written leaves the delivery failed.
		unwritable := errors.New("audit log unavailable")
		var told []bool
		err = e.wh.Resend(t.Context(), d.ID, func(_ context.Context, _ sqlq.Runner, changed bool) error {
			told = append(told, changed)
			return unwritable
		})
		if !errors.Is(err, unwritable) || !slices.Equal(told, []bool{true}) {
			t.Errorf("resend whose audit fails: %v, audit told %v; want the audit's error, told [true]", err, told)
		}
		if got := e.deliveries(t)[0].Status; got != "FAILED" {
			t.Errorf("after a resend whose audit failed the delivery is %s, want FAILED", got)
		}
		rcv.mu.Lock()
		rcv.failFirst = 0
		rcv.mu.Unlock()
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- e.wh.Resend(t.Context(), d.ID, nil) }()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) || (!errors.Is(e1, webhooks.ErrNotFailed) && !errors.Is(e2, webhooks.ErrNotFailed)) {
			t.Errorf("two resends at once: %v, %v; want one nil and one ErrNotFailed", e1, e2)
		}
		waitFor(t, 10*time.Second, "the resent delivery", func() bool { return rcv.distinct() == 1 })
		waitFor(t, 5*time.Second, "DELIVERED", func() bool { return e.deliveries(t)[0].Status == "DELIVERED" })
		if err := e.wh.Resend(t.Context(), d.ID, nil); !errors.Is(err, webhooks.ErrNotFailed) {
			t.Errorf("resend of a delivered delivery: %v", err)
		}
	})
}

// TestEndpointFilters: an endpoint receives only the event types it asked
// for, a client-bound one only its client's events; a deleted one nothing.
func TestEndpointFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{AllowPrivate: true})
	ctx := t.Context()
	all, _, _ := e.wh.CreateEndpoint(ctx, "", "http://127.0.0.1:1/all", nil)
	refunds, _, _ := e.wh.CreateEndpoint(ctx, "", "http://127.0.0.1:1/refunds", []payments.EventType{payments.EventRefunded, payments.EventRefunded})
	bound, _, _ := e.wh.CreateEndpoint(ctx, "shop-2", "http://127.0.0.1:1/bound", nil)
	gone, _, _ := e.wh.CreateEndpoint(ctx, "", "http://127.0.0.1:1/gone", nil)
	if ok, err := e.wh.DeleteEndpointOf(ctx, webhooks.OwnerOf("shop-2"), gone.ID); ok || !errors.Is(err, webhooks.ErrForbidden) {
		t.Errorf("a client-bound token deleting another's endpoint: %v %v, want ErrForbidden", ok, err)
	}
	if ok, err := e.wh.DeleteEndpointOf(ctx, webhooks.OwnerOf(""), gone.ID); !ok || err != nil {
		t.Errorf("delete: %v %v", ok, err)
	}
	if ok, _ := e.wh.DeleteEndpointOf(ctx, webhooks.OwnerOf(""), gone.ID); ok {
		t.Error("deleted twice")
	}
	if list, _ := e.wh.Endpoints(ctx, "shop-2"); len(list) != 1 || list[0].ID != bound.ID {
		t.Errorf("shop-2 sees %+v", list)
	}
	if list, _ := e.wh.Endpoints(ctx, ""); len(list) != 3 {
		t.Errorf("%d endpoints listed, want 3", len(list))
	}
	if len(refunds.Events) != 1 || refunds.Events[0] != payments.EventRefunded {
		t.Errorf("refunds endpoint types: %v", refunds.Events)
	}
	p := e.create(t, "shop-1", "filter-1")
	e.create(t, "shop-2", "filter-2")
	if _, err := e.pay.Refund(ctx, payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "filter-r", Origin: payments.Origin{Transport: "test"}}); err != nil {
		t.Fatal(err)
	}
	count := func() map[string]int {
		n := map[string]int{}
		for _, d := range e.deliveries(t) {
			n[d.EndpointID]++
		}
		return n
	}
	waitFor(t, 5*time.Second, "deliveries", func() bool { return len(e.deliveries(t)) == 5 })
	if n := count(); n[all.ID] != 3 || n[refunds.ID] != 1 || n[bound.ID] != 1 || n[gone.ID] != 0 {
		t.Errorf("deliveries per endpoint: %v", n)
	}
	if _, _, err := e.wh.CreateEndpoint(ctx, "", "http://127.0.0.1:1/", []payments.EventType{}); !errors.Is(err, payments.ErrInvalidInput) {
		t.Errorf("an empty event list: %v", err)
	}
}

// fakeResolver answers from a map.
type fakeResolver map[string]string

func (f fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ip, ok := f[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
}

// TestSSRFGuard: URLs that point at loopback, private or link-local
// addresses, directly or through a name, are refused with BAD_USER_INPUT;
// and a name that resolves elsewhere when the delivery connects (DNS
// rebinding) reaches nothing.
func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	resolver := fakeResolver{
		"public.test":   "93.184.216.34",
		"internal.test": "10.1.2.3",
		"metadata.test": "169.254.169.254",
		"six.test":      "fd00::1",
		"localhost":     "93.184.216.34", // what an attacker's DNS said at creation
	}
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{Resolver: resolver, RetryMin: time.Hour})
	ctx := t.Context()
	for _, bad := range []string{
		"http://127.0.0.1/hook", "http://127.1.2.3:8080/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
		"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data",
		"http://[fe80::1]/", "http://[fc00::1]/", "http://0.0.0.0/", "http://100.64.0.1/",
		"http://internal.test/", "http://metadata.test/", "https://six.test/",
		"ftp://public.test/", "file:///etc/passwd", "/relative", "not a url", "https:///nohost", "http://public.test/#frag",
		// IPv6 forms that embed an IPv4 address, and ranges that are not
		// public: documentation, 6to4, Teredo.
		"http://[::127.0.0.1]/", "http://[::7f00:1]/", "http://[::ffff:0:7f00:1]/", "http://[2002:7f00:1::]/",
		"http://[2001::1]/", "http://[2001:db8::1]/", "http://[64:ff9b::7f00:1]/", "http://192.0.2.2:18090/",
		"http://198.51.100.1/", "http://203.0.113.9/", "http://[3fff::1]/",
		// Ports that cannot be dialled.
		"http://public.test:99999/", "http://public.test:0/", "http://public.test:-1/",
		// Text the client never sent: a lone surrogate decoded, bad bytes.
		"https://public.test/hook\uFFFD", "https://public.test/\xff",
	} {
		if _, _, err := e.wh.CreateEndpoint(ctx, "", bad, nil); !errors.Is(err, payments.ErrInvalidInput) {
			t.Errorf("CreateEndpoint(%q) = %v, want BAD_USER_INPUT", bad, err)
		}
	}
	if _, _, err := e.wh.CreateEndpoint(ctx, "", "https://public.test/hook", nil); err != nil {
		t.Errorf("a public URL: %v", err)
	}
	for _, ip := range []string{"93.184.216.34", "2606:4700::1111", "8.8.8.8"} {
		if webhooks.Blocked(netip.MustParseAddr(ip)) {
			t.Errorf("%s is blocked", ip)
		}
	}

	// Rebinding: created while "localhost" resolved to a public address;
	// the delivery dials 127.0.0.1 and the dialer refuses.
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if _, _, err := e.wh.CreateEndpoint(ctx, "", "http://localhost:"+strconv.Itoa(port)+"/hook", nil); err != nil {
		t.Fatal(err)
	}
	run(t, e.wh.Run)
	e.create(t, "shop-1", "rebind")
	var d models.WebhookDelivery
	waitFor(t, 10*time.Second, "the attempt", func() bool {
		for _, row := range e.deliveries(t) {
			if row.Attempts > 0 && row.LastError != "" && row.EndpointID != "" {
				var ep models.WebhookEndpoint
				e.db.Gorm.First(&ep, "id = ?", row.EndpointID)
				if ep.URL != "https://public.test/hook" {
					d = row
					return true
				}
			}
		}
		return false
	})
	if hits.Load() != 0 || d.Status != "PENDING" || d.LastStatus != 0 {
		t.Errorf("rebinding reached the loopback server: %d hits, delivery %s %d %q", hits.Load(), d.Status, d.LastStatus, d.LastError)
	}
	t.Logf("the rebound delivery failed with %q", d.LastError)
}

// TestRedirectsAreNotFollowed: a 3xx answer is a failed attempt.
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	var followed atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{AllowPrivate: true, RetryMin: time.Hour})
	if _, _, err := e.wh.CreateEndpoint(t.Context(), "", redirect.URL, nil); err != nil {
		t.Fatal(err)
	}
	run(t, e.wh.Run)
	e.create(t, "shop-1", "redirect")
	waitFor(t, 10*time.Second, "the attempt", func() bool {
		rows := e.deliveries(t)
		return len(rows) == 1 && rows[0].Attempts == 1
	})
	d := e.deliveries(t)[0]
	if followed.Load() != 0 || d.Status != "PENDING" || d.LastStatus != http.StatusTemporaryRedirect {
		t.Errorf("redirect: followed %d, delivery %s %d %q", followed.Load(), d.Status, d.LastStatus, d.LastError)
	}
}

// TestThousandPaymentsTwoDispatchers: two instances deliver a 1,000-payment
// load between them; the receiver, failing its first 20 deliveries, sees
// every event at least once.
func TestThousandPaymentsTwoDispatchers(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	e := newEnv(t, db, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond})
	other, err := webhooks.New(db.Gorm, e.ev, webhooks.Config{AllowPrivate: true, RetryMin: 50 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, 20)
	_, secret, err := e.wh.CreateEndpoint(t.Context(), "", rcv.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret.Store(&secret)
	run(t, e.wh.Run)
	run(t, other.Run)
	const n = 1000
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				e.create(t, fmt.Sprintf("shop-%d", i%7), fmt.Sprintf("load-%d", i))
			}
		})
	}
	wg.Wait()
	waitFor(t, 60*time.Second, "1000 events delivered", func() bool { return rcv.distinct() == n })
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	dups := 0
	for _, c := range rcv.accepted {
		dups += c - 1
	}
	if len(rcv.bad) > 0 {
		t.Errorf("%d bad deliveries, first %q", len(rcv.bad), rcv.bad[0])
	}
	t.Logf("%d events, %d calls, %d duplicates", n, rcv.calls, dups)
}

// TestHugeAnswerHeadersFailTheAttempt: an answer's headers are read up to
// 64 KiB, as its body is; past that the attempt fails (and is retried),
// rather than each concurrent attempt holding up to net/http's 10 MB.
func TestHugeAnswerHeadersFailTheAttempt(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Padding", big)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	e := newEnv(t, dbtest.SQLite(t), webhooks.Config{AllowPrivate: true, RetryMin: time.Hour})
	if _, _, err := e.wh.CreateEndpoint(t.Context(), "", srv.URL, nil); err != nil {
		t.Fatal(err)
	}
	run(t, e.wh.Run)
	e.create(t, "shop-1", "huge-headers")
	waitFor(t, 10*time.Second, "the attempt", func() bool {
		rows := e.deliveries(t)
		return len(rows) == 1 && rows[0].Attempts == 1
	})
	if d := e.deliveries(t)[0]; d.Status == "DELIVERED" {
		t.Errorf("an answer with 1 MB of headers was read and counted delivered (status %d)", d.LastStatus)
	}
}
