package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

func restHeaders(key string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + token}}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return h
}

type problem struct {
	Type, Title, Detail, Code, Instance, Field, PaymentID string
	Status                                                int
	DifferingFields                                       []string
}

func decodeProblem(t *testing.T, res *http.Response, body []byte) problem {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json; body %s", ct, body)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != res.StatusCode || p.Title == "" || p.Type == "" || p.Detail == "" {
		t.Errorf("problem %+v lacks RFC 9457 members or disagrees with status %d", p, res.StatusCode)
	}
	return p
}

func TestRESTCreatePayment(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		body := `{"clientId": "shop-1", "amount": "10.50", "currency": "BRL", "method": "PIX"}`
		res, created := b.raw(t, "POST", "/api/payments", restHeaders("rest-1"), body)
		if res.StatusCode != http.StatusCreated || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("create: %d %v %s", res.StatusCode, res.Header, created)
		}
		var p map[string]any
		if err := json.Unmarshal(created, &p); err != nil {
			t.Fatal(err)
		}
		for field, want := range map[string]any{"clientId": "shop-1", "amount": "10.50", "currency": "BRL", "method": "PIX",
			"idempotencyKey": "rest-1", "status": "CAPTURED", "capturedAmount": "10.50", "refundedAmount": "0.00", "canceledAt": nil} {
			if p[field] != want {
				t.Errorf("%s = %v, want %v", field, p[field], want)
			}
		}
		if refunds, ok := p["refunds"].([]any); !ok || len(refunds) != 0 {
			t.Errorf("refunds = %v, want []", p["refunds"])
		}
		if p["id"] == "" || p["createdAt"] == "" || p["capturedAt"] != p["createdAt"] || res.Header.Get("Location") != "/api/payments/"+p["id"].(string) {
			t.Errorf("payment %v, Location %q", p, res.Header.Get("Location"))
		}

		// Retries, with the amount as a number, written differently, and
		// the fields in another order: 200, the same body byte for byte.
		for _, retry := range []string{body, `{"method":"PIX","currency":"brl","amount":10.5,"clientId":"shop-1"}`, `{"clientId":"shop-1","amount":1.05e1,"currency":"BRL","method":"PIX"}`} {
			res, replayed := b.raw(t, "POST", "/api/payments", restHeaders("rest-1"), retry)
			if res.StatusCode != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "true" || string(replayed) != string(created) {
				t.Errorf("replay of %s: %d, Idempotent-Replayed %q, body %s; want 200, true, %s",
					retry, res.StatusCode, res.Header.Get("Idempotent-Replayed"), replayed, created)
			}
		}

		res, conflict := b.raw(t, "POST", "/api/payments", restHeaders("rest-1"), `{"clientId":"shop-1","amount":"10.51","currency":"BRL","method":"PIX"}`)
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("conflict: %d %s", res.StatusCode, conflict)
		}
		if pr := decodeProblem(t, res, conflict); pr.Code != "IDEMPOTENCY_KEY_REUSED" || pr.PaymentID != p["id"] || strings.Join(pr.DifferingFields, ",") != "amount" {
			t.Errorf("conflict problem %+v", pr)
		}

		res, got := b.raw(t, "GET", "/api/payments/"+p["id"].(string), restHeaders(""), "")
		if res.StatusCode != http.StatusOK || string(got) != string(created) {
			t.Errorf("GET the payment: %d %s", res.StatusCode, got)
		}
		res, missing := b.raw(t, "GET", "/api/payments/pay_nope", restHeaders(""), "")
		if pr := decodeProblem(t, res, missing); res.StatusCode != http.StatusNotFound || pr.Code != "NOT_FOUND" {
			t.Errorf("GET unknown payment: %d %+v", res.StatusCode, pr)
		}
	})
}

// A key used on one transport replays on the other.
func TestKeySharedAcrossTransports(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		gql := b.create(t, "shared-1", input("shop-1", "25", "USD", "CREDIT_CARD"))
		res, body := b.raw(t, "POST", "/api/payments", restHeaders("shared-1"), `{"clientId":"shop-1","amount":"25.00","currency":"USD","method":"CREDIT_CARD"}`)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), gql.Payment.ID) {
			t.Errorf("REST retry of a GraphQL payment: %d %s, want 200 with %s", res.StatusCode, body, gql.Payment.ID)
		}

		res, body = b.raw(t, "POST", "/api/payments", restHeaders("shared-2"), `{"clientId":"shop-1","amount":"7","currency":"EUR","method":"BOLETO"}`)
		var rest map[string]string
		json.Unmarshal(body, &rest)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("REST create: %d %s", res.StatusCode, body)
		}
		again := b.create(t, "shared-2", input("shop-1", "7", "EUR", "BOLETO"))
		if !again.Replayed || again.Payment.ID != rest["id"] {
			t.Errorf("GraphQL retry of a REST payment: %+v, want a replay of %s", again, rest["id"])
		}
		transports := []string{}
		db.Gorm.Raw(`SELECT transport FROM idempotency_attempts WHERE payment_id = ? ORDER BY id`, rest["id"]).Scan(&transports)
		if strings.Join(transports, ",") != "rest,graphql" {
			t.Errorf("attempts came through %v, want rest then graphql", transports)
		}
	})
}

func TestRESTBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	valid := `{"clientId":"shop-1","amount":"10.50","currency":"BRL","method":"PIX"}`
	tests := []struct {
		name      string
		header    http.Header
		body      string
		status    int
		code      string
		wantField string
	}{
		{"no key header", restHeaders(""), valid, 400, "BAD_USER_INPUT", "idempotencyKey"},
		{"empty key", restHeaders(" "), valid, 400, "BAD_USER_INPUT", "idempotencyKey"},
		{"long key", restHeaders(strings.Repeat("k", 101)), valid, 400, "BAD_USER_INPUT", "idempotencyKey"},
		{"key with a tab", restHeaders("a\tb"), valid, 400, "BAD_USER_INPUT", "idempotencyKey"},
		{"two key headers", http.Header{"Authorization": {"Bearer " + token}, "Idempotency-Key": {"a", "b"}}, valid, 400, "BAD_USER_INPUT", "idempotencyKey"},
		{"not JSON", restHeaders("k"), `{"clientId":`, 400, "BAD_USER_INPUT", "body"},
		{"empty body", restHeaders("k"), ``, 400, "BAD_USER_INPUT", "body"},
		{"an array", restHeaders("k"), `[]`, 400, "BAD_USER_INPUT", "body"},
		{"unknown field", restHeaders("k"), `{"clientId":"c","amuont":"1","currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "body"},
		{"trailing data", restHeaders("k"), valid + `{}`, 400, "BAD_USER_INPUT", "body"},
		{"number as clientId", restHeaders("k"), `{"clientId":5,"amount":"1","currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "body"},
		{"amount null", restHeaders("k"), `{"clientId":"c","amount":null,"currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "amount"},
		{"amount true", restHeaders("k"), `{"clientId":"c","amount":true,"currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "amount"},
		{"amount too precise", restHeaders("k"), `{"clientId":"c","amount":10.505,"currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "amount"},
		{"currency", restHeaders("k"), `{"clientId":"c","amount":"1","currency":"XYZ","method":"PIX"}`, 400, "BAD_USER_INPUT", "currency"},
		{"method", restHeaders("k"), `{"clientId":"c","amount":"1","currency":"BRL","method":"cash"}`, 400, "BAD_USER_INPUT", "method"},
		{"no token", http.Header{"Idempotency-Key": {"k"}}, valid, 401, "UNAUTHENTICATED", ""},
		{"wrong token", http.Header{"Idempotency-Key": {"k"}, "Authorization": {"Bearer nope"}}, valid, 401, "UNAUTHENTICATED", ""},
		{"too large", restHeaders("k"), `{"clientId":"` + strings.Repeat("c", 2<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE", ""},
		// Read strictly: encoding/json kept the last of two amounts, took
		// "Amount" for amount, and ignored what followed the object.
		{"amount twice", restHeaders("k"), `{"clientId":"c","amount":"1","amount":"2","currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "body"},
		{"Amount", restHeaders("k"), `{"clientId":"c","Amount":"1","currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "body"},
		{"AMOUNT", restHeaders("k"), `{"clientId":"c","AMOUNT":"1","currency":"BRL","method":"PIX"}`, 400, "BAD_USER_INPUT", "body"},
		{"brackets after", restHeaders("k"), valid + `]]]`, 400, "BAD_USER_INPUT", "body"},
		{"text/plain", withHeader(restHeaders("k"), "Content-Type", "text/plain"), valid, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
		{"no content type", withHeader(restHeaders("k"), "Content-Type", ""), valid, 415, "UNSUPPORTED_MEDIA_TYPE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := b.raw(t, "POST", "/api/payments", tt.header, tt.body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, body)
			}
			p := decodeProblem(t, res, body)
			if p.Code != tt.code || p.Field != tt.wantField {
				t.Errorf("problem %+v, want code %s on field %q", p, tt.code, tt.wantField)
			}
		})
	}
	var n int64
	b.db.Gorm.Table("payments").Count(&n)
	if n != 0 {
		t.Errorf("%d payments after bad requests only, want 0", n)
	}
	res, body := b.raw(t, "GET", "/api/payments", restHeaders(""), "")
	if p := decodeProblem(t, res, body); res.StatusCode != http.StatusMethodNotAllowed || p.Code == "" {
		t.Errorf("GET /api/payments: %d %+v", res.StatusCode, p)
	}
}

// withHeader returns h with name set to value, or removed when value is "".
func withHeader(h http.Header, name, value string) http.Header {
	h = h.Clone()
	h.Del(name)
	if value != "" {
		h.Set(name, value)
	}
	return h
}
