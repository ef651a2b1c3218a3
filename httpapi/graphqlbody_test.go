package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A POST body to /graphql is one well-formed JSON object and nothing else,
// as a REST body is: encoding/json, gqlgen's decoder, ran the query of
// `{"query": …} garbage` and the second of two "query" members. Refused
// bodies get the answer of a body that is not JSON at all (400,
// BAD_REQUEST, no data) and run nothing.
func TestGraphQLBodyIsOneJSONObject(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		const create = `mutation { createPayment(input: {clientId: \"c1\", amount: \"1\", currency: \"BRL\", method: PIX}, idempotencyKey: \"k1\") { replayed } }`
		for _, tt := range []struct{ name, body, message string }{
			{"trailing data", `{"query":"{ __typename }"} garbage`, "nothing after it"},
			{"a second object", `{"query":"{ __typename }"}{"query":"` + create + `"}`, "nothing after it"},
			{"query twice", `{"query":"{ __typename }","query":"` + create + `"}`, "member name twice"},
			{"query twice, in two cases", `{"query":"{ __typename }","Query":"` + create + `"}`, `"query" twice`},
			{"a variable twice", `{"query":"` + create + `","variables":{"a":1,"a":2}}`, "member name twice"},
			{"not JSON after the object", `{"query":"{ __typename }"}{"query":`, "nothing after it"},
		} {
			res := b.post(t, tt.body)
			if res.Status != http.StatusBadRequest || res.code() != "BAD_REQUEST" || !strings.Contains(res.Errors[0].Message, tt.message) {
				t.Errorf("%s: status %d %+v, want 400 BAD_REQUEST saying %q", tt.name, res.Status, res.Errors, tt.message)
			}
			if res.Data != nil {
				t.Errorf("%s: data %v, want none", tt.name, res.Data)
			}
		}
		// A POST for a stream (graphql-sse) too: it runs any operation.
		h := restHeaders("")
		h.Set("Accept", "text/event-stream")
		res, raw := b.raw(t, "POST", "/graphql", h, `{"query":"{ __typename }","query":"`+create+`"}`)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "BAD_REQUEST") {
			t.Errorf("query twice, for a stream: %d %s, want 400 BAD_REQUEST", res.StatusCode, raw)
		}
		var n int64
		if err := db.Gorm.Table("payments").Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d payments were created by refused bodies, want 0", n)
		}
		// Whitespace around the object is no trailing data; a member in
		// another letter case, given once, is still read.
		for _, body := range []string{" \n{\"query\":\"{ __typename }\"}\r\n\t ", `{"Query":"{ __typename }"}`} {
			if res := b.post(t, body); res.Status != http.StatusOK || len(res.Errors) > 0 {
				t.Errorf("body %q: status %d %+v, want it run", body, res.Status, res.Errors)
			}
		}
	})
}
