package graph

import (
	"strings"
	"testing"
)

// Error messages never echo the request body: a value the client sent, in
// a variable or written in the document, is refused with what its type
// takes (the type, the allowed values), never with the value itself.
func TestErrorsDoNotEchoValues(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	const marker = "ECHO_MARKER"
	const create = `mutation($in: CreatePaymentInput!) { createPayment(input: $in, idempotencyKey: "k") { replayed } }`
	for _, tt := range []struct {
		name, query, variables, want string
	}{
		{"an enum variable", `query($s: PaymentStatus) { payments(filter: {status: $s}) { edges { cursor } } }`,
			`{"s": "ECHO_MARKER"}`, "not a valid PaymentStatus: use one of AUTHORIZED"},
		{"an enum in an input variable", create,
			`{"in": {"clientId": "c1", "amount": "1", "currency": "BRL", "method": "ECHO_MARKER"}}`, "not a valid PaymentMethod"},
		{"an enum literal", `{ payments(filter: {status: ECHO_MARKER}) { edges { cursor } } }`, `{}`,
			"not a valid PaymentStatus: use one of AUTHORIZED"},
		{"a string for an enum literal", `{ payments(filter: {status: "ECHO_MARKER"}) { edges { cursor } } }`, `{}`,
			"not a valid PaymentStatus"},
		{"a string for an Int literal", `{ payments(first: "ECHO_MARKER") { edges { cursor } } }`, `{}`,
			"Int cannot represent non-integer value"},
		{"an enum for a String literal", `{ payments(after: ECHO_MARKER) { edges { cursor } } }`, `{}`,
			"String cannot represent a non string value"},
		{"an object for a String literal", `{ payments(after: {x: "ECHO_MARKER"}) { edges { cursor } } }`, `{}`, "String"},
		{"a float for an ID variable", `query($id: ID!) { payment(id: $id) { id } }`, `{"id": 123.25}`, "an ID must be"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"query":` + quoteJSON(tt.query) + `,"variables":` + tt.variables + `}`
			res, rec := postVariables(t, h, body)
			if len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Message, tt.want) {
				t.Errorf("%s, want an error saying %q", rec.Body, tt.want)
			}
			if strings.Contains(strings.ToUpper(rec.Body.String()), marker) || strings.Contains(rec.Body.String(), "123.25") {
				t.Errorf("the answer repeats the value sent: %s", rec.Body)
			}
		})
	}
}
