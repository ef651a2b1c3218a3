package httpapi_test

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A single value given for a list variable is a list of one, as the
// GraphQL spec's list input coercion says (and strictVariables' own
// comment). gqlparser has by then made it a []string, which
// strictVariables does not take for a list: "events": "PAYMENT_CREATED"
// is refused as "a value of another kind is not a PaymentEventType".
func TestSingleValueForAListVariable(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	const create = `mutation($url: String!, $events: [PaymentEventType!]) {
	  createWebhookEndpoint(url: $url, events: $events) { endpoint { events } } }`
	res := b.gql(t, create, map[string]any{"url": "https://shop.example/hooks", "events": "PAYMENT_CREATED"})
	if len(res.Errors) > 0 || !strings.Contains(string(res.Data["createWebhookEndpoint"]), `["PAYMENT_CREATED"]`) {
		t.Errorf("events: \"PAYMENT_CREATED\": %+v %s, want an endpoint for that one type", res.Errors, res.Data["createWebhookEndpoint"])
	}
}

// A single value for a list variable is checked as the list's item: one
// that is not a value of the enum is still a variable error, and nothing
// is created.
func TestSingleBadValueForAListVariable(t *testing.T) {
	t.Parallel()
	b := setupEvents(t, dbtest.SQLite(t))
	const create = `mutation($url: String!, $events: [PaymentEventType!]) {
	  createWebhookEndpoint(url: $url, events: $events) { endpoint { events } } }`
	res := b.gql(t, create, map[string]any{"url": "https://shop.example/hooks", "events": "payment_created"})
	if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "not a valid PaymentEventType") {
		t.Errorf("events: \"payment_created\": %+v, want a variable error", res.Errors)
	}
	if len(res.Data) > 0 {
		t.Errorf("the operation ran: %s", res.Data["createWebhookEndpoint"])
	}
}
