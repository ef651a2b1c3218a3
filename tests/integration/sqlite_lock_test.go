package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestSQLiteWriteLockHeld: another process (here, the test) holds the SQLite
// file's write lock for longer than the server's busy timeout, as a second
// instance's long transaction or an operator's sqlite3 shell would. Every
// request that writes is answered, SERVICE_UNAVAILABLE (REST and the admin:
// 503) or a success once the lock is free, and none is an internal error:
// a busy file is "retry", not a bug. Once the lock is free, the refused
// create, retried with its key, is made.
func TestSQLiteWriteLockHeld(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "sqlite")
	// A busy timeout of 1 s instead of the server's 10 s: the same answers,
	// sooner (the requests give up at the busy timeout, under their 5 s).
	// A test SQLite URL always has a query (dbtest's sqliteSettings).
	srv := startServer(t, db.URL+"&_pragma=busy_timeout(1000)", "WEBHOOK_ALLOW_PRIVATE=true")
	exit, out, _ := runBinary(t, db.URL, "tokens", "create", "--name", "locked")
	if exit != 0 {
		t.Fatalf("tokens create: exit %d", exit)
	}
	managed := lastLine(out)
	a, err := gql(srv.url, createFor, map[string]any{"key": "before-the-lock", "amount": "100.00", "capture": false})
	if err != nil || a.code() != "" {
		t.Fatalf("create: %v %s", err, a.code())
	}
	var created struct{ Payment struct{ ID string } }
	if err := json.Unmarshal(a.Data["createPayment"], &created); err != nil {
		t.Fatal(err)
	}
	authorized := created.Payment.ID

	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	holder, err := sqlDB.BeginTx(context.Background(), nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()

	gqlWith := func(token, query string) func() (int, string, error) {
		return func() (int, string, error) {
			req, _ := http.NewRequest("POST", srv.url+"/graphql", strings.NewReader(query))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, "", err
			}
			defer res.Body.Close()
			var a gqlAnswer
			if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
				return res.StatusCode, "", err
			}
			return res.StatusCode, a.code(), nil
		}
	}
	now := time.Now().UnixNano()
	checks := []struct {
		name string
		send func() (int, string, error)
	}{
		{"createPayment", gqlWith(testToken, fmt.Sprintf(`{"query":"mutation { createPayment(input: {clientId: \"locked\", amount: \"1.00\", currency: \"USD\", method: CREDIT_CARD}, idempotencyKey: \"locked-%d\") { payment { id } } }"}`, now))},
		{"capturePayment", gqlWith(testToken, fmt.Sprintf(`{"query":"mutation { capturePayment(paymentId: \"%s\", idempotencyKey: \"locked-capture-%d\") { payment { id } } }"}`, authorized, now))},
		{"createWebhookEndpoint", gqlWith(testToken, `{"query":"mutation { createWebhookEndpoint(url: \"http://127.0.0.1:9/hook\") { secret } }"}`)},
		{"GraphQL with a managed token", gqlWith(managed, `{"query":"{ __typename }"}`)},
		{"REST create", func() (int, string, error) {
			res := postREST(t, srv.url, fmt.Sprintf("locked-rest-%d", now))
			return res.StatusCode, "", nil
		}},
		{"admin sign-in", func() (int, string, error) {
			noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			res, err := (&http.Client{CheckRedirect: noRedirect}).PostForm(srv.url+"/admin/login",
				url.Values{"username": {"admin"}, "password": {"unused"}})
			if err != nil {
				return 0, "", err
			}
			res.Body.Close()
			return res.StatusCode, "", nil
		}},
	}
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Go(func() {
			start := time.Now()
			status, code, err := c.send()
			took := time.Since(start).Round(time.Millisecond)
			t.Logf("%s with the write lock held: %d %s %v after %s", c.name, status, code, err, took)
			if err != nil || status == http.StatusInternalServerError || code == "INTERNAL_SERVER_ERROR" {
				t.Errorf("%s with the write lock held: status %d, code %q, %v; want an answer that is not an internal error",
					c.name, status, code, err)
			}
		})
	}
	wg.Wait()

	// Released, the lock is taken in turn again: the same create, retried
	// with its key, is made.
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	status, code, err := checks[0].send()
	if err != nil || status != http.StatusOK || code != "" {
		t.Errorf("createPayment retried once the lock was free: status %d, code %q, %v; want it made", status, code, err)
	}
}
