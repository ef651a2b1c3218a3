package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// failoverDeadline is how soon after the primary dies service must be back
// on every instance (contract v2, "High availability").
const failoverDeadline = 15 * time.Second

// TestFailover: PostgreSQL runs as a primary and a synchronous standby; two
// server processes use the multi-host URL (target_session_attrs=read-write)
// and take createPayment requests with distinct keys. The primary's
// postmaster is killed (SIGKILL) mid-load and the standby promoted. Then
// every request that got no answer or SERVICE_UNAVAILABLE is retried with
// its key until it settles, and the new primary is read:
//
//   - every payment a client was told about is there, with the id it was
//     told, and exactly one payment per key (checkInvariant);
//   - no request was answered with anything but a payment or
//     SERVICE_UNAVAILABLE (INTERNAL_SERVER_ERROR would say "our bug");
//   - each instance served again within failoverDeadline of the kill,
//     without a restart.
//
// Refunds flow beside the creates, on payments made before the kill: each
// refund key is applied once, every refund a client was told about is on
// the new primary with the id it was told, and the refunds of a payment add
// up to its refundedAmount, never more than was captured (refunds.check).
//
// The standby is promoted right after the kill, as a failover manager
// would once it has decided; the window measured is what CMPay and
// PostgreSQL add to the manager's own detection time (Patroni: up to its
// ttl, 30 s by default). It is logged and recorded in
// docs/benchmarks/2026-12-02-failover.md. Both
// servers run PostgreSQL's defaults otherwise, but for the standby's
// wal_retrieve_retry_interval (dbtest.StartReplicated): with the default
// 5 s, a standby that has just lost its stream waits that long before it
// acts on the promote request, and the promotion took either a few
// hundred milliseconds or about five seconds.
func TestFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cluster := dbtest.StartReplicated(t, dbtest.ReplicationOptions{Synchronous: true})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("primary's log:\n%s\nstandby's log:\n%s", cluster.Primary.Log(), cluster.Standby.Log())
		}
	})
	servers := []*process{startServer(t, cluster.URL), startServer(t, cluster.URL)}
	var next atomic.Uint64
	pick := func() string { return servers[next.Add(1)%uint64(len(servers))].url }
	refunds := startRefunds(t, servers[0].url, 4, pick)
	tr := startTraffic(t, 8, pick)

	tr.waitFor(t, "payments before the kill", 50, 10*time.Second, func(a answer) bool { return a.id != "" })
	killed := time.Now()
	cluster.Primary.Kill()
	cluster.Standby.Promote()
	promoted := time.Now()

	// Service is back on an instance at its first success after the
	// promotion. (Between the kill and the promotion a request may still
	// succeed: SIGKILL ends the postmaster only, and its backends finish
	// what they are doing before they notice. Their commits are
	// acknowledged only once the standby has them, so checkInvariant finds
	// them on the new primary like any other.)
	backAt := make(map[string]time.Time)
	deadline := killed.Add(failoverDeadline)
	for len(backAt) < len(servers) {
		if time.Now().After(deadline) {
			tr.halt()
			t.Fatalf("service not back on every instance within %s of the kill: back on %d of %d", failoverDeadline, len(backAt), len(servers))
		}
		time.Sleep(10 * time.Millisecond)
		tr.count(func(a answer) bool {
			if a.id != "" && a.at.After(promoted) && (backAt[a.url].IsZero() || a.at.Before(backAt[a.url])) {
				backAt[a.url] = a.at
			}
			return false
		})
	}
	// Some traffic on the new primary before stopping, so that what
	// follows the switch is checked too.
	tr.waitFor(t, "payments after the failover", 100, 10*time.Second, func(a answer) bool { return a.id != "" && a.sent.After(promoted) })
	tr.halt()
	refunds.halt()

	var firstBack, allBack time.Duration
	for _, at := range backAt {
		if d := at.Sub(killed); firstBack == 0 || d < firstBack {
			firstBack = d
		}
		allBack = max(allBack, at.Sub(killed))
	}
	unanswered, unavailable, beforePromotion := 0, 0, 0
	var slowestFailure time.Duration
	codes := map[string]int{}
	for _, answers := range tr.sent {
		for _, a := range answers {
			switch {
			case a.id != "" && a.at.After(killed) && a.at.Before(promoted):
				beforePromotion++
			case !a.answered:
				unanswered++
			case a.code != "":
				codes[a.code]++
				slowestFailure = max(slowestFailure, a.at.Sub(a.sent))
				if a.code == "SERVICE_UNAVAILABLE" {
					unavailable++
				}
			}
		}
	}
	for code, n := range codes {
		if code != "SERVICE_UNAVAILABLE" {
			t.Errorf("%d requests failed with %q during the failover; want SERVICE_UNAVAILABLE only", n, code)
		}
	}
	if unanswered+unavailable == 0 {
		t.Error("no request failed during the failover: the kill was not observed")
	}
	t.Logf("failover: promoted %s after the kill; first success after it %s after the kill, on every instance %s after it; "+
		"%d requests: %d without an answer, %d SERVICE_UNAVAILABLE (the slowest in %s), %d acknowledged between kill and promotion",
		promoted.Sub(killed).Round(time.Millisecond), firstBack.Round(time.Millisecond), allBack.Round(time.Millisecond),
		tr.count(func(answer) bool { return true }), unanswered, unavailable, slowestFailure.Round(time.Millisecond), beforePromotion)

	retried := time.Now()
	tr.retryAll(t, servers[1].url)
	// Read the new primary itself, not through the multi-host URL.
	newPrimary := dbtest.DB{Gorm: dbtest.Connect(t, cluster.Standby.URL)}
	checkInvariant(t, newPrimary, servers[0].url, tr.sent)
	refunds.settle(t, servers[1].url)
	refunds.check(t, newPrimary, servers[0].url)
	for _, s := range servers {
		waitHealth(t, s.url, http.StatusOK, time.Second)
	}
	t.Logf("retries settled in %s; whole test %s", time.Since(retried).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// refundTraffic sends refunds of 1.00 with fresh keys on a few captured
// payments until stopped, and remembers what each key got.
type refundTraffic struct {
	url      func() string
	payments []string
	mu       sync.Mutex
	sent     map[string]refundAnswer // by key
	stop     chan struct{}
	wg       sync.WaitGroup
	client   *http.Client
}

type refundAnswer struct {
	paymentID string
	refundID  string // set when a refund was acknowledged
	code      string // the error code of the last answer
}

// startRefunds creates a few captured payments through url, then refunds
// from them with workers until halted.
func startRefunds(t *testing.T, url string, workers int, pick func() string) *refundTraffic {
	t.Helper()
	rt := &refundTraffic{url: pick, sent: map[string]refundAnswer{}, stop: make(chan struct{}),
		client: &http.Client{Timeout: 20 * time.Second}}
	for i := range 8 {
		a, err := gql(url, createFor, map[string]any{"key": fmt.Sprintf("failover-refundable-%d", i), "amount": "1000.00", "capture": true})
		var p struct{ Payment struct{ ID string } }
		if err != nil || a.code() != "" || json.Unmarshal(a.Data["createPayment"], &p) != nil {
			t.Fatalf("create a payment to refund: %v %s", err, a.code())
		}
		rt.payments = append(rt.payments, p.Payment.ID)
	}
	for w := range workers {
		rt.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-rt.stop:
					return
				default:
				}
				key := fmt.Sprintf("failover-refund-%d-%d", w, n)
				rt.send(key, rt.payments[rand.N(len(rt.payments))], rt.url())
			}
		})
	}
	return rt
}

const refundOne = `mutation($id: ID!, $key: String!) { refundPayment(paymentId: $id, amount: "1.00", idempotencyKey: $key) { replayed refund { id } } }`

// send refunds 1.00 of paymentID with key through url and records the answer.
func (rt *refundTraffic) send(key, paymentID, url string) refundAnswer {
	ans := refundAnswer{paymentID: paymentID, code: "no answer"}
	body, _ := json.Marshal(map[string]any{"query": refundOne, "variables": map[string]any{"id": paymentID, "key": key}})
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if res, err := rt.client.Do(req); err == nil {
		var out gqlAnswer
		if json.NewDecoder(res.Body).Decode(&out) == nil {
			var r struct{ Refund struct{ ID string } }
			if ans.code = out.code(); ans.code == "" && json.Unmarshal(out.Data["refundPayment"], &r) == nil {
				ans.refundID = r.Refund.ID
			}
		}
		res.Body.Close()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if prev, ok := rt.sent[key]; ok && prev.refundID != "" && ans.refundID != prev.refundID {
		ans.code = fmt.Sprintf("refund %s, earlier %s", ans.refundID, prev.refundID)
	}
	rt.sent[key] = ans
	return ans
}

func (rt *refundTraffic) halt() {
	close(rt.stop)
	rt.wg.Wait()
}

// settle retries every refund key that got no refund and no definite
// refusal, as a client would, until each settles.
func (rt *refundTraffic) settle(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for key, a := range rt.sent {
		for a.refundID == "" && (a.code == "no answer" || a.code == "SERVICE_UNAVAILABLE") {
			if time.Now().After(deadline) {
				t.Fatalf("refund key %s did not settle: %+v", key, a)
			}
			a = rt.send(key, a.paymentID, url)
		}
	}
}

// check reads the new primary: one refund per key at most, every refund a
// client was told about there with its id, and each payment's refunds
// adding up to its refunded amount, within what was captured.
func (rt *refundTraffic) check(t *testing.T, db dbtest.DB, url string) {
	t.Helper()
	var rows []struct{ IdempotencyKey, ID string }
	if err := db.Gorm.Raw(`SELECT idempotency_key, id FROM refunds WHERE payment_id IN ?`, rt.payments).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, r := range rows {
		if _, dup := stored[r.IdempotencyKey]; dup {
			t.Errorf("refund key %s was applied twice", r.IdempotencyKey)
		}
		stored[r.IdempotencyKey] = r.ID
	}
	acked := 0
	for key, a := range rt.sent {
		switch {
		case a.refundID != "":
			acked++
			if stored[key] != a.refundID {
				t.Errorf("refund key %s: the client was told of refund %s, the database has %q", key, a.refundID, stored[key])
			}
			if again := rt.send(key, a.paymentID, url); again.refundID != a.refundID {
				t.Errorf("refund key %s: a retry got %+v, want refund %s again", key, again, a.refundID)
			}
		case a.code != "AMOUNT_EXCEEDS_AVAILABLE" && a.code != "":
			t.Errorf("refund key %s settled as %q", key, a.code)
		}
	}
	var mismatched int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM payments p WHERE p.id IN ? AND p.refunded_minor <>
		(SELECT COALESCE(SUM(r.amount_minor), 0) FROM refunds r WHERE r.payment_id = p.id)`, rt.payments).Scan(&mismatched)
	if mismatched != 0 || acked == 0 {
		t.Errorf("%d payments whose refunds do not add up to their refunded amount; %d refunds acknowledged", mismatched, acked)
	}
	t.Logf("refunds hold: %d keys, %d refunds stored, %d acknowledged", len(rt.sent), len(stored), acked)
}
