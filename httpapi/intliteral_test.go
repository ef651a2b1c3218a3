package httpapi_test

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// An Int literal outside 32 bits in the query text is a validation error,
// as the same number in a variable is ("an Int must be a whole number
// from -2147483648 to 2147483647"). Today gqlparser takes any int64 in a
// literal: first: 2147483648 is refused as COMPLEXITY_LIMIT_EXCEEDED
// ("complexity 4294967327") and first: -2147483649 reaches the resolver.
func TestIntLiteralsAreThirtyTwoBits(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, n := range []string{"2147483648", "-2147483649", "4294967296"} {
		res := b.post(t, `{"query":"{ payments(first: `+n+`) { edges { cursor } } }"}`)
		if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "32-bit") {
			t.Errorf("first: %s: %+v, want GRAPHQL_VALIDATION_FAILED saying an Int is 32 bits", n, res.Errors)
		}
	}
}

// The bounds themselves are Ints, and a variable's default value is a
// literal too.
func TestIntLiteralBounds(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, n := range []string{"2147483647", "-2147483648"} {
		res := b.post(t, `{"query":"{ payments(first: `+n+`) { edges { cursor } } }"}`)
		if res.code() == "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("first: %s: %+v, want it past validation", n, res.Errors)
		}
	}
	res := b.post(t, `{"query":"query($f: Int = 2147483648) { payments(first: $f) { edges { cursor } } }"}`)
	if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "32-bit") {
		t.Errorf("$f: Int = 2147483648: %+v, want GRAPHQL_VALIDATION_FAILED saying an Int is 32 bits", res.Errors)
	}
}
