package graph

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// An Int variable takes a JSON number only: a numeric string is a
// variable-coercion error, as the spec's input coercion for Int says, and
// a string out of the 32-bit range does not slip past the range check.
func TestIntVariableRefusesStrings(t *testing.T) {
	t.Parallel()
	h := NewHandler(mustService(t, dbtest.SQLite(t).Gorm), DefaultOptions())
	const top = `query($f: Int) { payments(first: $f) { edges { cursor } } }`
	for _, tt := range []struct {
		name, query, variables string
		refused                bool
	}{
		{"a number", top, `{"f": 5}`, false},
		{"a numeric string", top, `{"f": "5"}`, true},
		{"a string past 32 bits", top, `{"f": "99999999999"}`, true},
		{"a number past 32 bits", top, `{"f": 99999999999}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"query":` + quoteJSON(tt.query) + `,"variables":` + tt.variables + `}`
			res, rec := postVariables(t, h, body)
			if !tt.refused {
				if len(res.Errors) > 0 {
					t.Errorf("refused: %+v", res.Errors)
				}
				return
			}
			if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "whole number") {
				t.Errorf("%.300s, want a variable error saying what an Int is", rec.Body)
			}
			if len(res.Data) > 0 {
				t.Errorf("the operation ran: %.200s", rec.Body)
			}
		})
	}
}

// postVariables posts body, a GraphQL request in JSON, to h with full
// access, and returns the answer decoded and as recorded.
func postVariables(t *testing.T, h http.Handler, body string) (response, *httptest.ResponseRecorder) {
	t.Helper()
	req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
	req = req.WithContext(auth.WithPrincipal(req.Context(), auth.FullAccess(auth.KindEnvToken, "test")))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var res response
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		t.Fatalf("not JSON: %.200s", rec.Body)
	}
	return res, rec
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// An ID variable takes a JSON string or an integer, as the spec's input
// coercion for ID says: 1.5, 4.0 or 1e2 is a variable-coercion error, and
// no payment is made for a client "1.5".
func TestIDVariableRefusesNonIntegers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		h := NewHandler(mustService(t, db.Gorm), DefaultOptions())
		const create = `mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { payment { clientId } } }`
		for i, tt := range []struct {
			clientID string // JSON
			refused  bool
		}{
			{`"shop-1"`, false}, {`42`, false}, {`-7`, false},
			{`1.5`, true}, {`4.0`, true}, {`1e2`, true}, {`-0.5`, true}, {`12345678901234567890.1`, true},
		} {
			vars := `{"key": "id-` + string(rune('a'+i)) + `", "in": {"clientId": ` + tt.clientID +
				`, "amount": "1", "currency": "BRL", "method": "PIX"}}`
			body := `{"query":` + quoteJSON(create) + `,"variables":` + vars + `}`
			res, rec := postVariables(t, h, body)
			if !tt.refused {
				if len(res.Errors) > 0 {
					t.Errorf("clientId %s refused: %+v", tt.clientID, res.Errors)
				}
				continue
			}
			if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "an ID must be") ||
				strings.Contains(res.Errors[0].Message, tt.clientID) || len(res.Data) > 0 {
				t.Errorf("clientId %s: %.300s; want a variable error saying what an ID is, nothing run", tt.clientID, rec.Body)
			}
		}
		var made int64
		db.Gorm.Table("payments").Count(&made)
		if made != 3 {
			t.Errorf("%d payments, want the 3 with a string or integer clientId", made)
		}
	})
}
