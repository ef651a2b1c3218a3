package httpapi_test

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A newcomer's typos get a hint that names what was meant, the same way
// whether the field or value came in a REST body, a GraphQL variable or
// inline in a GraphQL document.
func TestErrorHints(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	rest := func(body string) string {
		t.Helper()
		res, raw := b.raw(t, "POST", "/api/payments", restHeaders("hint-key"), body)
		return decodeProblem(t, res, raw).Detail
	}
	gqlMessage := func(query string, vars map[string]any) string {
		t.Helper()
		res := b.gql(t, query, vars)
		if len(res.Errors) == 0 {
			t.Fatalf("no error for %s %v", query, vars)
		}
		var messages []string
		for _, e := range res.Errors {
			messages = append(messages, e.Message)
		}
		return strings.Join(messages, "\n")
	}
	const create = `mutation($input: CreatePaymentInput!) { createPayment(input: $input, idempotencyKey: "hint-key") { replayed } }`
	inlineTypo := gqlMessage(`mutation { createPayment(input: {clientId: "c", amuont: "1", currency: "BRL", method: PIX}, idempotencyKey: "k") { replayed } }`, nil)
	variableTypo := gqlMessage(create, map[string]any{"input": map[string]any{"clientId": "c", "amuont": "1", "currency": "BRL", "method": "PIX"}})

	for name, c := range map[string]struct{ got, want string }{
		"REST misspelt field":     {rest(`{"clientId":"c","amuont":"1","currency":"BRL","method":"PIX"}`), `the field "amuont" is not one this endpoint takes. Did you mean "amount"?`},
		"REST lowercase method":   {rest(`{"clientId":"c","amount":"1","currency":"BRL","method":"pix"}`), `values are case-sensitive: did you mean PIX?`},
		"REST unknown method":     {rest(`{"clientId":"c","amount":"1","currency":"BRL","method":"cash"}`), `values are case-sensitive`},
		"GraphQL inline typo":     {inlineTypo, `Did you mean "amount"?`},
		"GraphQL variable typo":   {variableTypo, `Did you mean "amount"?`},
		"GraphQL variable method": {gqlMessage(create, map[string]any{"input": map[string]any{"clientId": "c", "amount": "1", "currency": "BRL", "method": "pix"}}), `did you mean PIX?`},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s: %q, want it to contain %q", name, c.got, c.want)
		}
	}
	if strings.Contains(rest(`{"clientId":"c","amount":"1","currency":"BRL","method":"cash"}`), "did you mean") {
		t.Errorf("a method close to none gets a suggestion")
	}
}
