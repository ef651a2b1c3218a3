package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// newToken creates a managed token and returns its secret.
func (b *bundle) newToken(t *testing.T, client string, scopes ...auth.Scope) string {
	t.Helper()
	_, secret, err := b.tokens.Create(context.Background(), "test "+auth.JoinScopes(scopes), client, scopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// Managed tokens carry scopes, enforced on REST (GET needs payments:read,
// POST payments:write), GraphQL (queries payments:read, mutations
// payments:write) and /metrics (metrics:read); beyond them: FORBIDDEN, 403
// on REST, nothing done. API_TOKENS and the admin keep full access.
func TestManagedTokenScopes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		read := b.newToken(t, "", auth.PaymentsRead)
		write := b.newToken(t, "", auth.PaymentsWrite)
		both := b.newToken(t, "", auth.DefaultScopes...)
		metrics := b.newToken(t, "", auth.MetricsRead)
		const body = `{"clientId":"shop-1","amount":"1","currency":"BRL","method":"PIX"}`
		bearer := func(tok string) http.Header {
			return http.Header{"Authorization": {"Bearer " + tok}, "Content-Type": {"application/json"}, "Idempotency-Key": {"scoped-1"}}
		}
		rest := []struct {
			name, method, path, token string
			status                    int
		}{
			{"read: GET a payment", "GET", "/api/payments/pay_missing", read, 404},
			{"write: GET a payment", "GET", "/api/payments/pay_missing", write, 403},
			{"metrics: GET a payment", "GET", "/api/payments/pay_missing", metrics, 403},
			{"read: POST a payment", "POST", "/api/payments", read, 403},
			{"metrics: POST a payment", "POST", "/api/payments", metrics, 403},
			{"write: POST a payment", "POST", "/api/payments", write, 201},
			{"read and write: POST again", "POST", "/api/payments", both, 200},
			{"metrics: /metrics", "GET", "/metrics", metrics, 200},
			{"read and write: /metrics", "GET", "/metrics", both, 403},
			{"API_TOKENS: /metrics", "GET", "/metrics", token, 200},
		}
		for _, tt := range rest {
			res, out := b.raw(t, tt.method, tt.path, bearer(tt.token), body)
			if res.StatusCode != tt.status {
				t.Errorf("%s: %d %s, want %d", tt.name, res.StatusCode, out, tt.status)
				continue
			}
			if tt.status == 403 {
				if p := decodeProblem(t, res, out); p.Code != "FORBIDDEN" || !strings.Contains(p.Detail, "scope") {
					t.Errorf("%s: %+v, want FORBIDDEN naming the scope", tt.name, p)
				}
			}
		}
		if res, _ := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Basic " + basic("admin", adminPassword)}}, ""); res.StatusCode != 200 {
			t.Errorf("the admin on /metrics: %d", res.StatusCode)
		}

		gql := []struct {
			name, token, query string
			forbidden          bool
		}{
			{"read: a query", read, `{ payments { edges { cursor } } }`, false},
			{"write: a query", write, `{ payments { edges { cursor } } }`, true},
			{"read: a mutation", read, `mutation { createPayment(input: {clientId: "shop-1", amount: "2", currency: "BRL", method: PIX}, idempotencyKey: "scoped-2") { replayed } }`, true},
			{"metrics: a query", metrics, `{ payment(id: "pay_x") { id } }`, true},
			{"API_TOKENS: a query", token, `{ payments { edges { cursor } } }`, false},
		}
		for _, tt := range gql {
			res := b.do(t, "POST", "/graphql", tt.token, "application/json", `{"query":`+strconv.Quote(tt.query)+`}`)
			if tt.forbidden != (res.code() == "FORBIDDEN") || !tt.forbidden && len(res.Errors) > 0 {
				t.Errorf("%s: %d %+v, want forbidden %v", tt.name, res.Status, res.Errors, tt.forbidden)
			}
		}
		var keys []string
		db.Gorm.Table("payments").Pluck("idempotency_key", &keys)
		if strings.Join(keys, ",") != "scoped-1" {
			t.Errorf("payments made: %v, want only scoped-1 (by the payments:write token)", keys)
		}
	})
}

// A revoked token, or one never issued, is refused like a wrong one; a
// used token shows when it was last used.
func TestManagedTokenLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		tok, secret, err := b.tokens.Create(context.Background(), "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		const q = `{"query":"{ payments { edges { cursor } } }"}`
		if res := b.do(t, "POST", "/graphql", secret, "application/json", q); res.Status != 200 || len(res.Errors) > 0 {
			t.Fatalf("a new token: %d %+v", res.Status, res.Errors)
		}
		// The use is written in the background, off the request.
		list, _ := b.tokens.List(context.Background())
		for deadline := time.Now().Add(10 * time.Second); len(list) == 1 && list[0].LastUsedAt == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				break
			}
			list, _ = b.tokens.List(context.Background())
		}
		if len(list) != 1 || list[0].LastUsedAt == nil {
			t.Errorf("after a use: %+v, want lastUsedAt set", list)
		}
		if _, err := b.tokens.Revoke(context.Background(), tok.ID, nil); err != nil {
			t.Fatal(err)
		}
		if res := b.do(t, "POST", "/graphql", secret, "application/json", q); res.Status != 401 || res.code() != "UNAUTHENTICATED" {
			t.Errorf("a revoked token: %d %+v, want 401", res.Status, res.Errors)
		}
		forged := "cmpay_" + strings.Repeat("A", 43)
		if res := b.do(t, "POST", "/graphql", forged, "application/json", q); res.Status != 401 {
			t.Errorf("a token never issued: %d, want 401", res.Status)
		}
	})
}
