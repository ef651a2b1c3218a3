package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// Every answer of the API says X-Content-Type-Options: nosniff, errors
// included: a browser led to an API URL then renders it only as the
// Content-Type it was given (JSON), never as HTML or script it guessed from
// text a client put in the body (a client id, a metadata value).
func TestAPIAnswersSayNosniff(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	paid := b.create(t, "nosniff-1", input("nosniff", "10.00", "BRL", "PIX")).Payment.ID
	gqlHeaders := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + token}}
	for _, tt := range []struct {
		method, path string
		header       http.Header
		body         string
		status       int
	}{
		{"GET", "/api/payments/" + paid, restHeaders(""), "", http.StatusOK},
		{"GET", "/api/payments/pay_missing", restHeaders(""), "", http.StatusNotFound},
		{"GET", "/api/payments/" + paid, nil, "", http.StatusUnauthorized},
		{"POST", "/api/payments", restHeaders("nosniff-2"), `{"clientId": "nosniff"}`, http.StatusBadRequest},
		{"DELETE", "/api/payments/" + paid, restHeaders(""), "", http.StatusMethodNotAllowed},
		{"GET", "/api/nowhere", restHeaders(""), "", http.StatusNotFound},
		{"POST", "/graphql", gqlHeaders, `{"query": "{ payment(id: \"` + paid + `\") { id } }"}`, http.StatusOK},
		{"POST", "/graphql", http.Header{"Content-Type": {"application/json"}}, `{"query": "{ __typename }"}`, http.StatusUnauthorized},
		{"GET", "/healthz", nil, "", http.StatusOK},
		{"GET", "/api/openapi.json", nil, "", http.StatusOK},
	} {
		res, body := b.raw(t, tt.method, tt.path, tt.header, tt.body)
		if res.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d; body %s", tt.method, tt.path, res.StatusCode, tt.status, body)
		}
		if got := res.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
			t.Errorf("%s %s → %d: X-Content-Type-Options %q, want nosniff once", tt.method, tt.path, res.StatusCode, got)
		}
	}
}
