package integration_test

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
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// answer is what one request got.
type answer struct {
	id       string // the payment, when the answer was one
	replayed bool
	code     string // the error code, when the answer was an error
	answered bool   // false: no HTTP response at all
	url      string // the server it was sent to
	sent, at time.Time
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
	// The client waits longer than a create may take on the server (15 s),
	// so that "no answer" means the server gave none.
	tr := &traffic{url: url, sent: map[string][]answer{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 20 * time.Second}}
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
				url, sent := tr.url(), time.Now()
				got := sendCreate(context.Background(), tr.client, url, key)
				got.url, got.sent, got.at = url, sent, time.Now()
				tr.mu.Lock()
				tr.sent[key] = append(tr.sent[key], got)
				tr.mu.Unlock()
			}
		})
	}
	return tr
}

// waitFor polls until at least n answers so far satisfy match, and fails
// the test if that takes longer than within: what a fault test waits for
// instead of sleeping.
func (tr *traffic) waitFor(t *testing.T, what string, n int, within time.Duration, match func(answer) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if got := tr.count(match); got >= n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d within %s", what, got, n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// count returns how many answers so far satisfy match.
func (tr *traffic) count(match func(answer) bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, answers := range tr.sent {
		for _, a := range answers {
			if match(a) {
				n++
			}
		}
	}
	return n
}

func (tr *traffic) halt() {
	close(tr.stop)
	tr.wg.Wait()
	tr.client.CloseIdleConnections()
}

// retryAll sends every key that got no payment again, against url, until
// each has one (or the deadline passes), as a well-behaved client would:
// eight clients at once, a key retried by one of them only.
func (tr *traffic) retryAll(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var mu sync.Mutex
	retried := map[string][]answer{}
	eachKey(tr.sent, func(key string, answers []answer) {
		if answers[len(answers)-1].id != "" {
			return
		}
		for answers[len(answers)-1].id == "" {
			if time.Now().After(deadline) {
				t.Errorf("key %s still has no payment after retrying: %+v", key, answers)
				return
			}
			answers = append(answers, sendCreate(context.Background(), tr.client, url, key))
		}
		mu.Lock()
		retried[key] = answers
		mu.Unlock()
	})
	if t.Failed() {
		t.FailNow()
	}
	maps.Copy(tr.sent, retried)
}

// eachKey calls fn for every key of sent from eight goroutines, and
// returns once every call has. A test with thousands of keys (requests
// refused while a server stops come back at once) took seconds to retry
// and check them one after another.
func eachKey(sent map[string][]answer, fn func(key string, answers []answer)) {
	type entry struct {
		key     string
		answers []answer
	}
	entries := make(chan entry)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for e := range entries {
				fn(e.key, e.answers)
			}
		})
	}
	for key, answers := range sent {
		entries <- entry{key, answers}
	}
	close(entries)
	wg.Wait()
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
	var acked atomic.Int64
	eachKey(sent, func(key string, answers []answer) {
		id, ok := stored[key]
		for _, a := range answers {
			if a.id == "" {
				continue
			}
			acked.Add(1)
			if !ok || a.id != id {
				t.Errorf("key %s: the client was told about payment %s, the database has %q", key, a.id, id)
			}
		}
		if !ok {
			return
		}
		if again := sendCreate(context.Background(), client, url, key); again.id != id || !again.replayed {
			t.Errorf("key %s: a retry got %+v, want a replay of %s", key, again, id)
		}
	})
	if acked.Load() == 0 {
		t.Error("no payment was acknowledged: the test proved nothing")
	}
	t.Logf("invariant holds: %d keys, %d stored payments, %d acknowledgements", len(sent), len(stored), acked.Load())
}

// TestPostgresRestart: PostgreSQL stops and starts while requests flow. The
// server stays up, /healthz says 503 during the outage and 200 after,
// requests fail fast with SERVICE_UNAVAILABLE during it (REST: 503 with
// Retry-After), never INTERNAL_SERVER_ERROR, and succeed after; retrying
// the failed ones with their keys creates each payment at most once.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	cluster := dbtest.StartCluster(t)
	srv := startServer(t, cluster.URL)
	tr := startTraffic(t, 4, func() string { return srv.url })
	succeeded := func(a answer) bool { return a.id != "" }

	tr.waitFor(t, "payments before the outage", 20, 10*time.Second, succeeded)
	outage := time.Now()
	cluster.Stop()
	waitHealth(t, srv.url, http.StatusServiceUnavailable, 10*time.Second)
	tr.waitFor(t, "requests refused during the outage", 20, 10*time.Second, func(a answer) bool {
		return a.code != "" && a.sent.After(outage)
	})
	restKey := fmt.Sprintf("rest-outage-%d", time.Now().UnixNano())
	checkUnavailableREST(t, srv.url, restKey)
	cluster.Start()
	back := time.Now()
	waitHealth(t, srv.url, http.StatusOK, 30*time.Second)
	healthy := time.Now()
	tr.waitFor(t, "payments after the outage", 20, 10*time.Second, func(a answer) bool {
		return a.id != "" && a.sent.After(healthy)
	})
	tr.halt()

	failedDuring, okAfter := 0, 0
	var slowestFailure time.Duration
	for key, answers := range tr.sent {
		for _, a := range answers {
			if !a.answered {
				t.Errorf("key %s: the server gave no answer at all", key)
			}
			if a.code == "" {
				continue
			}
			failedDuring++
			if a.code != "SERVICE_UNAVAILABLE" {
				t.Errorf("key %s: failed with %q, want SERVICE_UNAVAILABLE", key, a.code)
			}
			slowestFailure = max(slowestFailure, a.at.Sub(a.sent))
		}
	}
	// Failing fast: a request for which the database is down is told so
	// within the connect timeout, not after the create's own deadline.
	if slowestFailure > database.DefaultConnectTimeout {
		t.Errorf("the slowest refused request took %s; a request must fail fast while the database is down", slowestFailure)
	}
	for key, answers := range tr.sent {
		for _, a := range answers {
			// Once /healthz says 200 again, requests succeed: the pool
			// has dropped its dead connections.
			if a.sent.After(healthy) {
				if a.id == "" {
					t.Errorf("key %s failed with %q after the database was back", key, a.code)
				} else {
					okAfter++
				}
			}
		}
	}
	if select1(srv) != nil {
		t.Fatalf("the server died: %v", select1(srv))
	}
	t.Logf("outage %s; %d requests failed during it (the slowest in %s), %d succeeded after",
		back.Sub(outage).Round(time.Millisecond), failedDuring, slowestFailure.Round(time.Millisecond), okAfter)

	// The REST request refused during the outage, retried with its key.
	if res := postREST(t, srv.url, restKey); res.StatusCode != http.StatusCreated {
		t.Errorf("the REST request refused during the outage, retried: status %d, want 201", res.StatusCode)
	}
	tr.retryAll(t, srv.url)
	db := dbtest.DB{}
	db.Gorm = dbtest.Connect(t, cluster.URL)
	checkInvariant(t, db, srv.url, tr.sent)
}

// blackholeBound is how long a create may take to be refused while the
// database does not answer at all. It is a request's time with the
// database (payments.statementTimeout, 5 s, from when it queues for a
// statement) and a margin: a create sent on a connection that went silent
// waits for it, and is not run again alone once the error says the
// database is unavailable; a create queued behind that statement has what
// is left of its 5 s, not 5 s more.
const blackholeBound = 7 * time.Second

// TestDatabaseBlackholed: the database stops answering without closing
// anything (a hung host, a network that drops packets) while requests
// flow. /healthz says 503 within its own 2 s; every request is still
// answered, SERVICE_UNAVAILABLE, within blackholeBound; none hangs.
func TestDatabaseBlackholed(t *testing.T) {
	t.Parallel()
	// A schema of the test's own on the shared server, behind a proxy of
	// its own: freezing it disturbs no other test.
	proxy, url := dbtest.ProxyURL(t, dbtest.Empty(t, "postgres"))
	srv := startServer(t, url)
	tr := startTraffic(t, 4, func() string { return srv.url })
	tr.waitFor(t, "payments before the black hole", 20, 10*time.Second, func(a answer) bool { return a.id != "" })
	frozen := time.Now()
	proxy.Freeze()

	healthStart := time.Now()
	res, err := http.Get(srv.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// /healthz gives the database 2 s; the bound leaves room for a loaded
	// machine and stays under a statement's 5 s, which a health check that
	// waited on statements would take.
	if took := time.Since(healthStart); res.StatusCode != http.StatusServiceUnavailable || took > 4*time.Second {
		t.Errorf("/healthz with the database silent: %d after %s, want 503 within 4s", res.StatusCode, took)
	}
	// Besides the requests caught in flight, a few sent while it is
	// silent; then every answer is awaited.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			key := fmt.Sprintf("blackholed-%d-%d", frozen.UnixNano(), i)
			sent := time.Now()
			a := sendCreate(context.Background(), tr.client, srv.url, key)
			a.sent, a.at = sent, time.Now()
			tr.mu.Lock()
			tr.sent[key] = append(tr.sent[key], a)
			tr.mu.Unlock()
		})
	}
	tr.halt()
	wg.Wait()

	refused := 0
	var slowest time.Duration
	for key, answers := range tr.sent {
		for _, a := range answers {
			if a.at.Before(frozen) {
				continue
			}
			slowest = max(slowest, a.at.Sub(a.sent))
			switch {
			case !a.answered:
				t.Errorf("key %s: no answer after %s", key, a.at.Sub(a.sent).Round(time.Millisecond))
			case a.code != "" && a.code != "SERVICE_UNAVAILABLE":
				t.Errorf("key %s: failed with %q, want SERVICE_UNAVAILABLE", key, a.code)
			case a.code != "":
				refused++
			}
		}
	}
	if slowest > blackholeBound {
		t.Errorf("the slowest request took %s with the database silent, want at most %s", slowest, blackholeBound)
	}
	t.Logf("database silent: %d requests refused with SERVICE_UNAVAILABLE, the slowest answer after %s", refused, slowest.Round(time.Millisecond))
}

// TestAdminWithTheDatabaseSilent: while the database does not answer at
// all, what checks credentials in it (the admin's pages and sign-in,
// /metrics read with a staff account, a managed API token) answers 503
// within its deadline instead of waiting for the database. The admin's
// deadline is 4 s here (ADMIN_REQUEST_TIMEOUT; 10 s by default), so that
// the sign-in, which has no shorter one, answers within the test's 10 s.
func TestAdminWithTheDatabaseSilent(t *testing.T) {
	t.Parallel()
	direct := dbtest.Empty(t, "postgres")
	proxy, dbURL := dbtest.ProxyURL(t, direct)
	srv := startServer(t, dbURL, "ADMIN_REQUEST_TIMEOUT=4s")
	code, out, _ := runBinary(t, direct, "tokens", "create", "--name", "silent")
	if code != 0 {
		t.Fatalf("tokens create: exit %d", code)
	}
	managed := lastLine(out) // not yet in the server's cache
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	signIn := func() (*http.Response, error) {
		return (&http.Client{CheckRedirect: noRedirect}).PostForm(srv.url+"/admin/login",
			url.Values{"username": {"admin"}, "password": {"unused"}})
	}
	res, err := signIn()
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookies := res.Cookies()
	if res.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign-in with the database up: %d, cookies %v", res.StatusCode, cookies)
	}
	proxy.Freeze()

	checks := []struct {
		name  string
		send  func() (*http.Response, error)
		bound time.Duration // the deadline that answers it, and a margin
	}{
		{"a page, signed in", func() (*http.Response, error) {
			req, _ := http.NewRequest("GET", srv.url+"/admin", nil)
			req.AddCookie(cookies[0])
			return (&http.Client{CheckRedirect: noRedirect}).Do(req)
		}, 8 * time.Second},
		{"the sign-in", signIn, 7 * time.Second},
		{"GraphQL with a managed token", func() (*http.Response, error) {
			req, _ := http.NewRequest("POST", srv.url+"/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+managed)
			return http.DefaultClient.Do(req)
		}, 8 * time.Second},
		{"/metrics with a staff account", func() (*http.Response, error) {
			req, _ := http.NewRequest("GET", srv.url+"/metrics", nil)
			req.SetBasicAuth("admin", "unused")
			return http.DefaultClient.Do(req)
		}, 8 * time.Second},
	}
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			start := time.Now()
			res, err := c.send()
			took := time.Since(start)
			if err != nil {
				t.Errorf("%s: %v after %s", c.name, err, took)
				return
			}
			res.Body.Close()
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || took > c.bound {
				t.Errorf("%s with the database silent: %d (Retry-After %q) after %s, want 503 with Retry-After within %s",
					c.name, res.StatusCode, res.Header.Get("Retry-After"), took.Round(time.Millisecond), c.bound)
			}
			t.Logf("%s: %d after %s", c.name, res.StatusCode, took.Round(time.Millisecond))
		})
	}
	wg.Wait()
}

// postREST sends POST /api/payments with an idempotency key; the body is
// read and closed.
func postREST(t *testing.T, url, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/api/payments",
		strings.NewReader(`{"clientId": "shop-rest", "amount": "10.50", "currency": "BRL", "method": "PIX"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /api/payments: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res
}

// checkUnavailableREST: while the database is down, the REST endpoint
// answers 503 with Retry-After and a problem whose code is
// SERVICE_UNAVAILABLE.
func checkUnavailableREST(t *testing.T, url, key string) {
	t.Helper()
	res := postREST(t, url, key)
	var problem struct{ Code string }
	err := json.NewDecoder(res.Body).Decode(&problem)
	retryAfter, convErr := strconv.Atoi(res.Header.Get("Retry-After"))
	if res.StatusCode != http.StatusServiceUnavailable || err != nil || problem.Code != "SERVICE_UNAVAILABLE" ||
		res.Header.Get("Content-Type") != "application/problem+json" || convErr != nil || retryAfter < 1 {
		t.Errorf("REST with the database down: status %d, Content-Type %q, Retry-After %q, code %q (%v); "+
			"want 503 application/problem+json, Retry-After in seconds, SERVICE_UNAVAILABLE",
			res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Retry-After"), problem.Code, err)
	}
}

// TestServerKilled: a server process is SIGKILLed under load, on either
// database. Every payment it acknowledged is there afterwards (on SQLite,
// read by a new process on the same file), and retrying the requests it
// never answered creates each payment once.
func TestServerKilled(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := dbtest.Open(t, dialect)
			first := startServer(t, db.URL)
			tr := startTraffic(t, 8, func() string { return first.url })
			tr.waitFor(t, "payments before the kill", 100, 20*time.Second, func(a answer) bool { return a.id != "" })
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Wait for it to be gone; the process's cleanup reads exited too.
			first.exited <- <-first.exited
			tr.halt()
			// SQLite has one writer: the next process starts once the
			// first is gone, as after a crash and restart.
			second := startServer(t, db.URL)

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
		})
	}
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
	// Let the server finish what it started: a create still running when
	// its key is looked up below would commit before the retry and turn
	// "nothing stored" into a replay. Done once the count of payments has
	// stood still for half a second.
	count := func() (n int64) {
		db.Gorm.Raw(`SELECT count(*) FROM payments WHERE client_id = 'shop-1'`).Scan(&n)
		return n
	}
	last := int64(-1)
	waitUntil(t, "payments still being created after the clients left", 15*time.Second, 500*time.Millisecond, func() bool {
		now := count()
		still := now == last
		last = now
		return still
	})

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
	first, db := startOnEmpty(t, "postgres")
	second := startServer(t, db.URL)
	tr := startTraffic(t, 8, func() string { return first.url })
	tr.waitFor(t, "payments before SIGTERM", 20, 10*time.Second, func(a answer) bool { return a.id != "" })
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
