package graph

import "testing"

// A createPayment request as clients send it, the shape of most bodies.
const createBody = `{"query":"mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }","variables":{"key":"bench-1","in":{"clientId":"bench","amount":"10.00","currency":"BRL","method":"PIX"}}}`

func TestBodyProblem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{createBody, true},
		{`{"query":"{ __typename }"}`, true},
		{` {"query":"{ __typename }"} ` + "\n", true},
		{`{"query":"{ __typename }","extensions":{"a":{"b":[1,2,{"c":null}]}}}`, true},
		{`{}`, true},
		{`{"query":"{ __typename }"} garbage`, false},
		{`{"query":"{ __typename }"}{}`, false},
		{`{"query":"a","query":"b"}`, false},
		{`{"query":"a","Query":"b"}`, false},
		{`{"variables":{"in":{"amount":"1","amount":"2"}}}`, false},
		{`{"query":"a","variables":{"in":{"x":{"y":1,"y":2}}}}`, false},
		{`[{"query":"a"}]`, false},
		{`"query"`, false},
		{`{"query":`, false},
		{``, false},
		{`{"other":1,"other2":{"query":1,"Query":2}}`, true}, // only the request's own members fold case
		// JSON's whitespace only: U+2028, U+00A0, \v and \f are not.
		{"{\"query\":\"a\"}\u2028", false},
		{"{\"query\":\"a\"}\u00a0", false},
		{"{\"query\":\"a\"}\v", false},
		{"\f{\"query\":\"a\"}", false},
		{"{\"query\":\"a\"}\r\n\t ", true},
	} {
		if got := bodyProblem([]byte(tt.body)); (got == "") != tt.ok {
			t.Errorf("bodyProblem(%s) = %q, want ok %v", tt.body, got, tt.ok)
		}
	}
}

func BenchmarkBodyProblem(b *testing.B) {
	body := []byte(createBody)
	b.ReportAllocs()
	for b.Loop() {
		if p := bodyProblem(body); p != "" {
			b.Fatal(p)
		}
	}
}
