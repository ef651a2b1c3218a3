package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
	"github.com/cmpay/cmpay/webhooks"
)

// gqlData sends a GraphQL request to a server process (gql) and decodes
// its data into out; an error in the answer fails.
func gqlData(url, query string, vars map[string]any, out any) error {
	a, err := gql(url, query, vars)
	if err != nil {
		return err
	}
	if len(a.Errors) > 0 {
		return fmt.Errorf("GraphQL error %s", a.code())
	}
	if out == nil {
		return nil
	}
	raw, err := json.Marshal(a.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// createPayment creates a payment through a server process and returns
// its id.
func createPayment(url, client, key string) (string, error) {
	var out struct {
		CreatePayment struct{ Payment struct{ ID string } }
	}
	err := gqlData(url, `mutation($c: ID!, $k: String!) { createPayment(input: {clientId: $c, amount: "12.34", currency: "BRL", method: PIX}, idempotencyKey: $k) { payment { id } } }`,
		map[string]any{"c": client, "k": key}, &out)
	return out.CreatePayment.Payment.ID, err
}

// TestSubscriptionAcrossInstances: two server processes on one PostgreSQL
// database; an event committed through one reaches a WebSocket subscriber
// of the other, and an SSE subscriber of the first, within a second.
func TestSubscriptionAcrossInstances(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	a, b := startServer(t, db.URL), startServer(t, db.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	ws, err := streamtest.DialWS(ctx, b.url, "Bearer "+testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Subscribe(ctx, "1", streamtest.EventsQuery, map[string]any{"client": "across"}); err != nil {
		t.Fatal(err)
	}
	sse, err := streamtest.DialSSE(ctx, http.DefaultClient, a.url, "Bearer "+testToken, streamtest.EventsQuery, map[string]any{"client": "across"})
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	// Both subscriptions are live once a first event reaches them.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		if _, err := createPayment(a.url, "across", fmt.Sprintf("warm-up-%d", i)); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := ws.NextEvent(wctx)
		wcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event reached instance B's subscriber: %v", err)
		}
	}
	// nextReal skips the warm-up events still on their way.
	nextReal := func(next func() (streamtest.Event, error)) (streamtest.Event, error) {
		for {
			e, err := next()
			if err != nil || !strings.HasPrefix(e.IdempotencyKey, "warm-up-") {
				return e, err
			}
		}
	}

	var worst time.Duration
	for i := range 10 {
		start := time.Now()
		id, err := createPayment(a.url, "across", fmt.Sprintf("across-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		e, err := nextReal(func() (streamtest.Event, error) { return ws.NextEvent(rctx) })
		rcancel()
		if err != nil || e.Payment.ID != id {
			t.Fatalf("event %d on instance B: %+v, %v", i, e, err)
		}
		worst = max(worst, time.Since(start))
		// The SSE subscriber on instance A sees it too.
		if e2, err := nextReal(sse.NextEvent); err != nil || e2.ID != e.ID {
			t.Fatalf("SSE on instance A: %+v, %v", e2, err)
		}
	}
	if worst > time.Second {
		t.Errorf("an event took %s to reach the other instance's subscriber", worst)
	}
	t.Logf("slowest of 10 events from commit on A to subscriber on B: %s", worst.Round(time.Millisecond))
}

// holdingReceiver is a webhook endpoint that verifies every signature,
// answers 500 to its first failFirst deliveries, and while hold is set
// keeps each request for a second before answering: a delivery whose
// sender dies meanwhile is not counted as received.
type holdingReceiver struct {
	secret    atomic.Pointer[string]
	failFirst int64
	hold      atomic.Bool

	calls, inFlight, orphaned, badSignatures atomic.Int64
	mu                                       sync.Mutex
	received                                 map[string]int
}

func (h *holdingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n := h.calls.Add(1)
	secret := h.secret.Load()
	if secret == nil || webhooks.Verify(*secret, r.Header.Get(webhooks.HeaderSignature), body, time.Now(), time.Minute) != nil {
		h.badSignatures.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if n <= h.failFirst {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if h.hold.Load() {
		h.inFlight.Add(1)
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			h.inFlight.Add(-1)
			h.orphaned.Add(1) // its sender died: not received
			return
		}
		h.inFlight.Add(-1)
	}
	h.mu.Lock()
	h.received[r.Header.Get(webhooks.HeaderEventID)]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// undelivered describes, for a failure message, what the database holds
// about the events the receiver has not seen: whether the outbox numbered
// them, and their deliveries' state.
func undelivered(t *testing.T, db dbtest.DB, h *holdingReceiver) string {
	t.Helper()
	h.mu.Lock()
	seen := make([]string, 0, len(h.received))
	for id := range h.received {
		seen = append(seen, id)
	}
	h.mu.Unlock()
	var counts []map[string]any
	db.Gorm.Raw(`SELECT (SELECT count(*) FROM payment_events) AS outbox_rows,
		(SELECT COALESCE(sum(cardinality(seqs)), 0) FROM event_batches) AS numbered,
		(SELECT max(last_id) FROM event_batches) AS last_id,
		(SELECT count(*) FROM webhook_deliveries) AS deliveries`).Scan(&counts)
	var missing []map[string]any
	db.Gorm.Raw(`SELECT id, event_id, event_seq, status, attempts, retries, lease_until, next_attempt_at, last_status,
		last_error, now() AS now FROM webhook_deliveries WHERE status <> 'DELIVERED' OR event_id::text NOT IN ? LIMIT 20`,
		append(seen, "")).Scan(&missing)
	var unnumbered []map[string]any
	db.Gorm.Raw(`SELECT e.seq, e.type, e.at, e.payment_id, e.idempotency_key FROM payment_events e
		WHERE NOT EXISTS (SELECT 1 FROM event_batches b WHERE e.seq = ANY(b.seqs)) ORDER BY e.seq LIMIT 20`).Scan(&unnumbered)
	var cursors []map[string]any
	db.Gorm.Raw(`SELECT name, frontier, last_id, numbered FROM event_cursors`).Scan(&cursors)
	var near []map[string]any
	db.Gorm.Raw(`SELECT b.last_id, b.first_id, b.seqs FROM event_batches b WHERE EXISTS (SELECT 1 FROM payment_events e
		WHERE NOT EXISTS (SELECT 1 FROM event_batches x WHERE e.seq = ANY(x.seqs))
		AND EXISTS (SELECT 1 FROM unnest(b.seqs) u(s) WHERE abs(u.s - e.seq) <= 20)) ORDER BY b.last_id`).Scan(&near)
	return fmt.Sprintf("counts %v\ndeliveries not delivered or not received: %v\noutbox rows in no batch: %v\ncursors: %v\nbatches near them: %v",
		counts, missing, unnumbered, cursors, near)
}

func (h *holdingReceiver) distinct() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.received)
}

// TestWebhooksSurviveAKilledInstance: a 1,000-payment load is delivered to
// a receiver that checks signatures and fails its first 20 deliveries.
// Instance A delivers until it holds dozens of deliveries in flight; B
// starts beside it, then A is killed (SIGKILL) before B listens; B
// delivers A's once their leases run out, besides its own, and the
// receiver sees every event at least once. A holds dozens only while the
// receiver's answers count as fast: once its held ones end, a second on,
// it sends a few at a time (webhooks' busy), so the kill does not wait
// for B's start, which takes about that long. An endpoint has 2 s to
// answer here (the receiver holds each delivery for one), so that A's
// leases (3 s) run out in a fifth of the default's time.
func TestWebhooksSurviveAKilledInstance(t *testing.T) {
	t.Parallel()
	env := []string{"WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_RETRY_MIN=200ms", "WEBHOOK_ATTEMPT_TIMEOUT=2s"}
	a, db := startOnEmpty(t, "postgres", env...)
	rcv := &holdingReceiver{failFirst: 20, received: map[string]int{}}
	hook := httptest.NewServer(rcv)
	defer hook.Close()
	var created struct {
		CreateWebhookEndpoint struct{ Secret string }
	}
	if err := gqlData(a.url, `mutation($u: String!) { createWebhookEndpoint(url: $u) { secret } }`, map[string]any{"u": hook.URL}, &created); err != nil {
		t.Fatal(err)
	}
	rcv.secret.Store(&created.CreateWebhookEndpoint.Secret)
	rcv.hold.Store(true)

	const n = 1000
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := createPayment(a.url, fmt.Sprintf("shop-%d", i%5), fmt.Sprintf("load-%d", i)); err != nil {
					return // A was killed: B creates the rest below
				}
			}
		})
	}
	// Kill instance A while it has deliveries held by the receiver, with
	// B running beside it.
	deadline := time.Now().Add(30 * time.Second)
	for rcv.inFlight.Load() < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("deliveries never piled up: %d in flight, %d calls", rcv.inFlight.Load(), rcv.calls.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	starting := launch(t, db.URL, env...)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	b := starting.ready(t)
	// The receiver sees A's held deliveries cut off as their connections
	// close; without one, the test would prove nothing. Then it holds
	// nothing more: B's deliveries need not wait.
	waitUntil(t, "a delivery of the killed instance cut off at the receiver", 10*time.Second, 10*time.Millisecond,
		func() bool { return rcv.orphaned.Load() > 0 })
	orphaned := rcv.orphaned.Load()
	rcv.hold.Store(false)
	wg.Wait()
	// Whatever A had not created yet, and retries of what it had (replays):
	// through B, from as many clients as before.
	failed := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := createPayment(b.url, fmt.Sprintf("shop-%d", i%5), fmt.Sprintf("load-%d", i)); err != nil {
					failed <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(failed)
	if err := <-failed; err != nil {
		t.Fatal(err)
	}

	deadline = time.Now().Add(90 * time.Second)
	for rcv.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d of %d events (%d calls); the database then held:\n%s",
				rcv.distinct(), n, rcv.calls.Load(), undelivered(t, db, rcv))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if bad := rcv.badSignatures.Load(); bad > 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}
	t.Logf("%d events received after the kill at +%s (%d deliveries were cut off by it), %d calls in all",
		n, time.Since(killedAt).Round(time.Second), orphaned, rcv.calls.Load())
}

// TestWebhookSecretSealedAtStart: a server started with WEBHOOK_SECRET_KEY
// seals the signing secrets stored before it, and signs deliveries with
// the secret each endpoint was given; the database then holds it nowhere.
func TestWebhookSecretSealedAtStart(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	env := []string{"WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_RETRY_MIN=200ms"}
	stored := func() string {
		t.Helper()
		var secret string
		if err := db.Gorm.Table("webhook_endpoints").Select("secret").Row().Scan(&secret); err != nil {
			t.Fatal(err)
		}
		return secret
	}

	stop := func(p *process) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-p.exited:
			p.exited <- err // for the cleanup
		case <-time.After(20 * time.Second):
			t.Fatal("a server still runs 20s after SIGTERM")
		}
	}

	before := startServer(t, db.URL, env...)
	rcv := &holdingReceiver{received: map[string]int{}}
	hook := httptest.NewServer(rcv)
	defer hook.Close()
	var created struct {
		CreateWebhookEndpoint struct{ Secret string }
	}
	if err := gqlData(before.url, `mutation($u: String!) { createWebhookEndpoint(url: $u) { secret } }`, map[string]any{"u": hook.URL}, &created); err != nil {
		t.Fatal(err)
	}
	secret := created.CreateWebhookEndpoint.Secret
	rcv.secret.Store(&secret)
	// delivered waits for the receiver to have n events, each signed with
	// the endpoint's own secret.
	delivered := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for rcv.distinct() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d deliveries in 20s (%d calls, %d with a bad signature)", rcv.distinct(), n, rcv.calls.Load(), rcv.badSignatures.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if bad := rcv.badSignatures.Load(); bad > 0 {
			t.Errorf("%d deliveries with a bad signature", bad)
		}
	}
	if stored() != secret {
		t.Fatalf("without a key the secret is stored as %q, want it as given", stored())
	}
	stop(before)

	after := startServer(t, db.URL, append(env, "WEBHOOK_SECRET_KEY="+strings.Repeat("5a", 32))...)
	if got := stored(); !strings.HasPrefix(got, "e1:") || strings.Contains(got, secret) {
		t.Fatalf("after a start with a key the secret is stored as %q", got)
	}
	if _, err := createPayment(after.url, "shop-1", "sealed-1"); err != nil {
		t.Fatal(err)
	}
	delivered(1)
	stop(after)

	// Without any key the server does not start: no delivery could be
	// signed, and new secrets would be stored unsealed.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WEBHOOK_SECRET_KEY") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DATABASE_URL="+db.URL, "ADDR=127.0.0.1:0", "API_TOKENS="+testToken, "ADMIN_PASSWORD=unused")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "WEBHOOK_SECRET_KEY is not set") {
		t.Fatalf("a start without the key: %v\n%s", err, out)
	}

	// A new key with the old one beside it: sealed again under the new key,
	// and deliveries still carry the endpoint's own secret.
	sealedBefore := stored()
	rotated := startServer(t, db.URL, append(env, "WEBHOOK_SECRET_KEY="+strings.Repeat("6b", 32),
		"WEBHOOK_SECRET_KEY_PREVIOUS="+strings.Repeat("5a", 32))...)
	if got := stored(); got == sealedBefore || !strings.HasPrefix(got, "e1:") {
		t.Fatalf("after a start with a new key the secret is stored as %q (before: %q)", got, sealedBefore)
	}
	if _, err := createPayment(rotated.url, "shop-1", "sealed-2"); err != nil {
		t.Fatal(err)
	}
	delivered(2)
}
