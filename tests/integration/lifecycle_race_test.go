package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// gqlAnswer is any GraphQL answer: data by field, and the errors' codes.
type gqlAnswer struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Extensions struct{ Code string }
	}
}

func (a gqlAnswer) code() string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[0].Extensions.Code
}

// gql sends a GraphQL request to one server process.
func gql(url, query string, vars map[string]any) (gqlAnswer, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest("POST", url+"/graphql", strings.NewReader(string(body)))
	if err != nil {
		return gqlAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return gqlAnswer{}, err
	}
	defer res.Body.Close()
	var out gqlAnswer
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("status %d: %w", res.StatusCode, err)
	}
	return out, nil
}

// concurrently runs n requests at once, the i-th on servers[i % len].
func concurrently(servers []*process, n int, send func(i int, url string) (gqlAnswer, error)) ([]gqlAnswer, []error) {
	answers, errs := make([]gqlAnswer, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = send(i, servers[i%len(servers)].url)
		})
	}
	close(start)
	wg.Wait()
	return answers, errs
}

const (
	createFor  = `mutation($key: String!, $amount: Decimal!, $capture: Boolean) { createPayment(input: {clientId: "race", amount: $amount, currency: "BRL", method: PIX, capture: $capture}, idempotencyKey: $key) { payment { id } } }`
	refundFor  = `mutation($id: ID!, $key: String!) { refundPayment(paymentId: $id, amount: "10.00", idempotencyKey: $key) { replayed refund { id } } }`
	captureFor = `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, idempotencyKey: $key) { payment { status } } }`
	cancelFor  = `mutation($id: ID!, $key: String!) { cancelPayment(paymentId: $id, idempotencyKey: $key) { payment { status } } }`
)

// TestLifecycleRacesAcrossProcesses: three server processes on one
// PostgreSQL database. Refunds never add up to more than was captured,
// one refund key refunds once, and of a capture and a cancel one wins.
func TestLifecycleRacesAcrossProcesses(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	servers := []*process{startServer(t, db.URL), startServer(t, db.URL), startServer(t, db.URL)}
	create := func(key, amount string, capture bool) string {
		t.Helper()
		a, err := gql(servers[0].url, createFor, map[string]any{"key": key, "amount": amount, "capture": capture})
		if err != nil || a.code() != "" {
			t.Fatalf("create %s: %v %s", key, err, a.code())
		}
		var p struct{ Payment struct{ ID string } }
		_ = json.Unmarshal(a.Data["createPayment"], &p)
		return p.Payment.ID
	}

	paid := create("race-paid", "100.00", true)
	answers, errs := concurrently(servers, 20, func(i int, url string) (gqlAnswer, error) {
		return gql(url, refundFor, map[string]any{"id": paid, "key": fmt.Sprintf("race-refund-%d", i)})
	})
	codes := map[string]int{}
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("refund %d: %v", i, errs[i])
		}
		codes[a.code()]++
	}
	// A loser that finds something left, but not enough, is refused for
	// the amount; one that finds it all refunded, for the status.
	if codes[""] != 10 || codes["AMOUNT_EXCEEDS_AVAILABLE"]+codes["PAYMENT_STATE_CONFLICT"] != 10 {
		t.Errorf("20 refunds of 10.00 on 100.00: %v, want 10 applied and 10 refused", codes)
	}
	var sum int64
	var status string
	db.Gorm.Raw(`SELECT COALESCE(SUM(amount_minor), 0) FROM refunds WHERE payment_id = ?`, paid).Scan(&sum)
	db.Gorm.Raw(`SELECT status FROM payments WHERE id = ?`, paid).Scan(&status)
	if sum != 10000 || status != "REFUNDED" {
		t.Errorf("refunds sum to %d minor units, status %s; want 10000, REFUNDED", sum, status)
	}

	paid = create("race-one-key", "100.00", true)
	answers, errs = concurrently(servers, 16, func(_ int, url string) (gqlAnswer, error) {
		return gql(url, refundFor, map[string]any{"id": paid, "key": "race-one-refund-key"})
	})
	ids, firsts := map[string]bool{}, 0
	for i, a := range answers {
		var r struct {
			Replayed bool
			Refund   struct{ ID string }
		}
		if errs[i] != nil || a.code() != "" || json.Unmarshal(a.Data["refundPayment"], &r) != nil {
			t.Fatalf("refund %d: %v %s", i, errs[i], a.code())
		}
		ids[r.Refund.ID] = true
		if !r.Replayed {
			firsts++
		}
	}
	var refunds int64
	db.Gorm.Raw(`SELECT COUNT(*) FROM refunds WHERE payment_id = ?`, paid).Scan(&refunds)
	if len(ids) != 1 || firsts != 1 || refunds != 1 {
		t.Errorf("16 requests with one key: %d refund ids, %d not replayed, %d refunds stored; want 1, 1, 1", len(ids), firsts, refunds)
	}

	for round := range 5 {
		auth := create(fmt.Sprintf("race-auth-%d", round), "10", false)
		answers, errs = concurrently(servers, 2, func(i int, url string) (gqlAnswer, error) {
			query := []string{captureFor, cancelFor}[i]
			return gql(url, query, map[string]any{"id": auth, "key": fmt.Sprintf("race-%d-%d", round, i)})
		})
		won := 0
		for i, a := range answers {
			switch {
			case errs[i] != nil:
				t.Fatal(errs[i])
			case a.code() == "":
				won++
			case a.code() != "PAYMENT_STATE_CONFLICT":
				t.Errorf("round %d: %s", round, a.code())
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d of a capture and a cancel won, want exactly 1", round, won)
		}
	}
}
