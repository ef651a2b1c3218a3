package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// FuzzRequestDecoding sends arbitrary bodies to both APIs: every answer is
// well-formed JSON with an error code or a payment, never a panic or a 5xx.
func FuzzRequestDecoding(f *testing.F) {
	b := setupB(f, dbtest.SQLite(f))
	for _, s := range []string{
		`{"clientId":"c","amount":"10.50","currency":"BRL","method":"PIX"}`,
		`{"clientId":"c","amount":10.5,"currency":"brl","method":"PIX"}`,
		`{"clientId":"c","amount":1e400,"currency":"BRL","method":"PIX"}`,
		`{"amount":null}`, `[]`, `{`, ``, `null`, `"x"`, `{"clientId":{"a":[1,2]}}`,
		`{"query":"mutation { createPayment(input:{clientId:\"c\",amount:1.5,currency:\"BRL\",method:PIX}, idempotencyKey:\"k\") { replayed } }"}`,
		`{"query":"{ payments(first: -1) { edges { cursor } } }"}`,
		`{"query":"query($a: Decimal!) { __typename }","variables":{"a":{"b":1}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/api/payments", "/graphql"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "fuzz")
			rec := httptest.NewRecorder()
			b.handler.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			var out map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("%s %q: the answer is not JSON: %s", path, body, rec.Body)
			}
			if rec.Code >= 400 || out["errors"] != nil {
				if !strings.Contains(rec.Body.String(), `"code"`) {
					t.Fatalf("%s %q: an error without a code: %s", path, body, rec.Body)
				}
			}
		}
	})
}
