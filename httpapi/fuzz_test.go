package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// FuzzRequestDecoding sends arbitrary bodies to both APIs: every answer is
// well-formed JSON with an error code or a payment, never a panic or a 5xx;
// REST accepts only bodies that are strictly one JSON object with the
// contract's field names, and its errors never repeat the body.
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
		// Strict REST decoding: each of these must be refused.
		`{"clientId":"c","amount":"1","amount":"2","currency":"BRL","method":"PIX"}`,
		`{"clientId":"c","Amount":"1","currency":"BRL","method":"PIX"}`,
		`{"clientId":"c","amount":"1","currency":"BRL","method":"PIX"}]]]`,
		"{\"clientId\":\"c\xff\",\"amount\":\"1\",\"currency\":\"BRL\",\"method\":\"PIX\"}",
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
			if path == "/api/payments" {
				if rec.Code < 300 && !strictCreateBody(body) {
					t.Fatalf("%q was accepted (%d), but it is not one JSON object with exactly-named, unrepeated fields", body, rec.Code)
				}
				// Long enough not to be a word of a message by chance.
				if rec.Code >= 400 && len(body) >= 12 && strings.Contains(rec.Body.String(), body) {
					t.Fatalf("the answer repeats the body %q: %s", body, rec.Body)
				}
			}
		}
	})
}

// strictCreateBody reports whether body is what POST /api/payments may
// accept: one JSON object, valid UTF-8, whose member names are among the
// contract's, spelt exactly so, none twice, and nothing after it.
func strictCreateBody(body string) bool {
	if !utf8.ValidString(body) {
		return false
	}
	allowed := map[string]bool{"clientId": true, "amount": true, "currency": true, "method": true}
	dec := jsontext.NewDecoder(strings.NewReader(body), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	seen := map[string]bool{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil || !allowed[name.String()] || seen[name.String()] {
			return false
		}
		seen[name.String()] = true
		if err := dec.SkipValue(); err != nil {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}
