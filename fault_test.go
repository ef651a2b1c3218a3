package main

// Fault tests. Each one runs real server processes against a real
// PostgreSQL, breaks something while requests flow, and then checks the
// invariant by reading the database:
//
//	every payment a client was told about exists exactly once; no key has
//	two payments; a retry of any request with its key returns the payment
//	it created, if it created one.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// answer is what one request got.
type answer struct {
	id       string // the payment, when the answer was one
	replayed bool
	code     string // the error code, when the answer was an error
	answered bool   // false: no HTTP response at all
	at       time.Time
}

// sendCreate posts createPayment for a key and says what came back.
func sendCreate(ctx context.Context, client *http.Client, url, key string) answer {
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/graphql", bytes.NewReader([]byte(createBody(key))))
	if err != nil {
		return answer{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := client.Do(req)
	if err != nil {
		return answer{}
	}
	defer res.Body.Close()
	var out struct {
		Data struct {
			CreatePayment *struct {
				Replayed bool
				Payment  struct{ ID string }
			}
		}
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return answer{answered: true, code: fmt.Sprintf("status %d, body not JSON", res.StatusCode)}
	}
	if len(out.Errors) > 0 || out.Data.CreatePayment == nil {
		code := fmt.Sprintf("status %d", res.StatusCode)
		if len(out.Errors) > 0 {
			code = out.Errors[0].Extensions.Code
		}
		return answer{answered: true, code: code}
	}
	return answer{answered: true, id: out.Data.CreatePayment.Payment.ID, replayed: out.Data.CreatePayment.Replayed}
}

// traffic sends createPayment with a fresh key per request from several
// workers until stopped, and remembers every key and what it got.
type traffic struct {
	url    func() string // where to send, read before each request
	mu     sync.Mutex
	sent   map[string][]answer
	stop   chan struct{}
	wg     sync.WaitGroup
	client *http.Client
}

func startTraffic(t *testing.T, workers int, url func() string) *traffic {
	tr := &traffic{url: url, sent: map[string][]answer{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 10 * time.Second}}
	prefix := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	for w := range workers {
		tr.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-tr.stop:
					return
				default:
				}
				key := fmt.Sprintf("%s-%d-%d", prefix, w, n)
				got := sendCreate(context.Background(), tr.client, tr.url(), key)
				got.at = time.Now()
				tr.mu.Lock()
				tr.sent[key] = append(tr.sent[key], got)
				tr.mu.Unlock()
			}
		})
	}
	return tr
}

func (tr *traffic) halt() {
	close(tr.stop)
	tr.wg.Wait()
	tr.client.CloseIdleConnections()
}

// retryAll sends every key that got no payment again, against url, until
// each has one (or the deadline passes), as a well-behaved client would.
func (tr *traffic) retryAll(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for key, answers := range tr.sent {
		for answers[len(answers)-1].id == "" {
			if time.Now().After(deadline) {
				t.Fatalf("key %s still has no payment after retrying: %+v", key, answers)
			}
			answers = append(answers, sendCreate(context.Background(), tr.client, url, key))
		}
		tr.sent[key] = answers
	}
}

// checkInvariant reads the database and retries every key once more.
func checkInvariant(t *testing.T, db dbtest.DB, url string, sent map[string][]answer) {
	t.Helper()
	var rows []struct {
		IdempotencyKey string
		N              int
		ID             string
	}
	if err := db.Gorm.Raw(`SELECT idempotency_key, COUNT(*) AS n, MIN(id) AS id FROM payments
		WHERE client_id = 'shop-1' GROUP BY idempotency_key`).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, r := range rows {
		if r.N != 1 {
			t.Errorf("key %s has %d payments", r.IdempotencyKey, r.N)
		}
		stored[r.IdempotencyKey] = r.ID
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	acked := 0
	for key, answers := range sent {
		id, ok := stored[key]
		for _, a := range answers {
			if a.id == "" {
				continue
			}
			acked++
			if !ok || a.id != id {
				t.Errorf("key %s: the client was told about payment %s, the database has %q", key, a.id, id)
			}
		}
		if !ok {
			continue
		}
		if again := sendCreate(context.Background(), client, url, key); again.id != id || !again.replayed {
			t.Errorf("key %s: a retry got %+v, want a replay of %s", key, again, id)
		}
	}
	if acked == 0 {
		t.Error("no payment was acknowledged: the test proved nothing")
	}
	t.Logf("invariant holds: %d keys, %d stored payments, %d acknowledgements", len(sent), len(stored), acked)
}

// TestPostgresRestart: PostgreSQL stops and starts while requests flow. The
// server stays up, /healthz says 503 during the outage and 200 after,
// requests fail with a coded error during it and succeed after, and
// retrying the failed ones creates each payment at most once.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	cluster := dbtest.StartCluster(t)
	srv := startServer(t, cluster.URL)
	tr := startTraffic(t, 4, func() string { return srv.url })

	time.Sleep(time.Second)
	outage := time.Now()
	cluster.Stop()
	waitHealth(t, srv.url, http.StatusServiceUnavailable, 10*time.Second)
	time.Sleep(time.Second)
	cluster.Start()
	back := time.Now()
	waitHealth(t, srv.url, http.StatusOK, 30*time.Second)
	healthy := time.Now()
	time.Sleep(time.Second)
	tr.halt()

	failedDuring, okAfter := 0, 0
	for key, answers := range tr.sent {
		for _, a := range answers {
			if !a.answered {
				t.Errorf("key %s: the server gave no answer at all", key)
			}
			if a.code != "" {
				failedDuring++
				if a.code != "INTERNAL_SERVER_ERROR" {
					t.Errorf("key %s: failed with %q, want INTERNAL_SERVER_ERROR", key, a.code)
				}
			}
		}
	}
	for key, answers := range tr.sent {
		for _, a := range answers {
			// Once /healthz says 200 again, requests succeed: the pool
			// has dropped its dead connections.
			if a.at.After(healthy.Add(200 * time.Millisecond)) {
				if a.id == "" {
					t.Errorf("key %s failed with %q after the database was back", key, a.code)
				} else {
					okAfter++
				}
			}
		}
	}
	if okAfter == 0 {
		t.Error("no request succeeded after the database came back")
	}
	if failedDuring == 0 {
		t.Error("no request failed during the outage: it was not observed")
	}
	if select1(srv) != nil {
		t.Fatalf("the server died: %v", select1(srv))
	}
	t.Logf("outage %s; %d requests failed cleanly during it, %d succeeded after", back.Sub(outage).Round(time.Millisecond), failedDuring, okAfter)

	tr.retryAll(t, srv.url)
	db := dbtest.DB{}
	db.Gorm = openDB(t, cluster.URL)
	checkInvariant(t, db, srv.url, tr.sent)
}

// TestServerKilled: a server process is killed (SIGKILL) while requests
// flow; every request that got no answer is retried against a second
// instance. No payment is duplicated and none acknowledged is lost.
func TestServerKilled(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	first, second := startServer(t, db.URL), startServer(t, db.URL)
	tr := startTraffic(t, 8, func() string { return first.url })
	time.Sleep(700 * time.Millisecond)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	tr.halt()

	unanswered := 0
	for _, answers := range tr.sent {
		if !answers[len(answers)-1].answered {
			unanswered++
		}
	}
	t.Logf("%d requests in all, %d without an answer when the server died", len(tr.sent), unanswered)
	if unanswered == 0 {
		t.Error("no request was cut off: the kill was not observed")
	}
	tr.retryAll(t, second.url)
	checkInvariant(t, db, second.url, tr.sent)
}

// TestClientsDisconnect: clients give up at random moments, mid-request.
// Each payment exists once or not at all, and the retry says which: a
// replay of the stored payment, or a new one.
func TestClientsDisconnect(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	srv := startServer(t, db.URL)
	client := &http.Client{}
	defer client.CloseIdleConnections()
	const n = 200
	keys := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		keys[i] = fmt.Sprintf("disconnect-%d-%d", time.Now().UnixNano(), i)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(4000))*time.Microsecond)
			defer cancel()
			sendCreate(ctx, client, srv.url, keys[i])
		})
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // let the server finish what it started

	existed, created := 0, 0
	for _, key := range keys {
		var ids []string
		db.Gorm.Raw(`SELECT id FROM payments WHERE client_id = 'shop-1' AND idempotency_key = ?`, key).Scan(&ids)
		if len(ids) > 1 {
			t.Errorf("key %s has %d payments", key, len(ids))
			continue
		}
		again := sendCreate(context.Background(), client, srv.url, key)
		switch {
		case len(ids) == 1 && (!again.replayed || again.id != ids[0]):
			t.Errorf("key %s: stored %s, the retry got %+v; want a replay of it", key, ids[0], again)
		case len(ids) == 0 && (again.replayed || again.id == ""):
			t.Errorf("key %s: nothing stored, the retry got %+v; want a new payment", key, again)
		case len(ids) == 1:
			existed++
		default:
			created++
		}
	}
	t.Logf("%d requests: %d had created their payment before the client left (the retry replayed it), %d had not (the retry created it)", n, existed, created)
	if existed == 0 && created == 0 {
		t.Error("nothing was checked")
	}
}

// TestSIGTERMWithTraffic: SIGTERM while requests flow. Requests in flight
// are answered; new connections are refused; the process exits within its
// shutdown timeout; whatever got no answer is retried elsewhere safely.
func TestSIGTERMWithTraffic(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	first, second := startServer(t, db.URL), startServer(t, db.URL)
	tr := startTraffic(t, 8, func() string { return first.url })
	time.Sleep(700 * time.Millisecond)
	sent := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first.exited:
		first.exited <- err
		if err != nil {
			t.Errorf("exit: %v, want status 0", err)
		}
		t.Logf("exited %s after SIGTERM", time.Since(sent).Round(time.Millisecond))
	case <-time.After(12 * time.Second): // SHUTDOWN_TIMEOUT is 10s
		t.Fatal("still running 12s after SIGTERM")
	}
	tr.halt()
	for key, answers := range tr.sent {
		for _, a := range answers {
			if a.answered && a.code != "" {
				t.Errorf("key %s: an answer with an error %q; in-flight requests must complete", key, a.code)
			}
		}
	}
	tr.retryAll(t, second.url)
	checkInvariant(t, db, second.url, tr.sent)
}

func waitHealth(t *testing.T, url string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, err := http.Get(url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz did not say %d within %s", want, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// select1 reports whether the process has exited, without waiting.
func select1(p *process) error {
	select {
	case err := <-p.exited:
		p.exited <- err
		if err == nil {
			return errors.New("exited")
		}
		return err
	default:
		return nil
	}
}
