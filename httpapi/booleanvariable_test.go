package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A number for a Boolean variable is refused (right) as "cannot use a
// string as Boolean" (wrong: the client sent a number). The transports
// decode numbers as json.Number, a string type, and gqlparser names the Go
// kind; strictVariables rewrites that message for String and Int only.
func TestBooleanVariableErrorNamesWhatWasSent(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res := b.post(t, `{"query":"query($f: Boolean) { payments(filter: {flagged: $f}) { edges { cursor } } }","variables":{"f":1}}`)
	if res.code() != "GRAPHQL_VALIDATION_FAILED" || strings.Contains(res.Errors[0].Message, "string") {
		t.Errorf("flagged: 1: %+v, want a variable error that does not call the number a string", res.Errors)
	}
}

// A refusal of a variable names the JSON type sent, wherever the value
// sits: at the top, in an input object, as a single value for a list.
func TestVariableErrorsNameTheJSONType(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	const flagged = `query($f: Boolean) { payments(filter: {flagged: $f}) { edges { cursor } } }`
	const filter = `query($f: PaymentFilter) { payments(filter: $f) { edges { cursor } } }`
	for _, tt := range []struct {
		query, variables, want string
	}{
		{flagged, `{"f": 1}`, "cannot use a number as Boolean"},
		{flagged, `{"f": "true"}`, "cannot use a string as Boolean"},
		{flagged, `{"f": [true]}`, "cannot use an array as Boolean"},
		{filter, `{"f": {"flagged": 0}}`, "cannot use a number as Boolean"},
		{filter, `{"f": 7}`, "must be a PaymentFilter object, not a number"},
		{filter, `{"f": "x"}`, "must be a PaymentFilter object, not a string"},
	} {
		body, err := json.Marshal(map[string]any{"query": tt.query, "variables": json.RawMessage(tt.variables)})
		if err != nil {
			t.Fatal(err)
		}
		res := b.post(t, string(body))
		if res.code() != "GRAPHQL_VALIDATION_FAILED" || res.Errors[0].Message != tt.want {
			t.Errorf("%s: %+v, want %q", tt.variables, res.Errors, tt.want)
		}
	}
}
