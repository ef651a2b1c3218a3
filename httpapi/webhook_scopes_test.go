package httpapi_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// webhooks:manage alone reads nothing: a token without payments:read
// cannot make an endpoint (every delivery carries a payment), and an
// unbound one lists and deletes only the endpoints of no client, never a
// client's endpoint URLs and the credentials they may hold; deleting a
// client's is FORBIDDEN.
func TestWebhooksManageAloneReadsNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		manageOnly := b.newToken(t, "", auth.WebhooksManage)
		boundManageOnly := b.newToken(t, "shop-1", auth.WebhooksManage)
		boundReader := b.newToken(t, "shop-1", auth.PaymentsRead, auth.WebhooksManage)
		const create = `mutation($url: String!) { createWebhookEndpoint(url: $url) { endpoint { id } } }`
		call := func(tok, query string, vars map[string]any) gqlResponse {
			body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
			if err != nil {
				t.Fatal(err)
			}
			return b.do(t, "POST", "/graphql", tok, "application/json", string(body))
		}
		for name, tok := range map[string]string{"unbound": manageOnly, "bound to shop-1": boundManageOnly} {
			res := call(tok, create, map[string]any{"url": "https://attacker.example/hook"})
			if res.code() != "FORBIDDEN" || string(res.Data["createWebhookEndpoint"]) != "null" {
				t.Errorf("createWebhookEndpoint with webhooks:manage alone (%s): %s %s; want FORBIDDEN", name, res.code(), res.Data["createWebhookEndpoint"])
			}
		}
		shop := call(boundReader, create, map[string]any{"url": "https://user:s3cret@shop-1.example/hook"})
		ours := call(token, create, map[string]any{"url": "https://ops.example/hook"})
		if len(shop.Errors) > 0 || len(ours.Errors) > 0 {
			t.Fatalf("creating with payments:read: %+v %+v", shop.Errors, ours.Errors)
		}
		var made struct{ Endpoint struct{ ID string } }
		_ = json.Unmarshal(shop.Data["createWebhookEndpoint"], &made)

		list := call(manageOnly, `{ webhookEndpoints { id url } }`, nil)
		if got := string(list.Data["webhookEndpoints"]); strings.Contains(got, "s3cret") || strings.Contains(got, made.Endpoint.ID) ||
			!strings.Contains(got, "ops.example") {
			t.Errorf("webhookEndpoints for webhooks:manage alone: %s %+v; want the endpoint of no client only", got, list.Errors)
		}
		// Changing another's endpoint is beyond the token's scopes or
		// client: FORBIDDEN, and the endpoint stays.
		const del = `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }`
		for name, tok := range map[string]string{"webhooks:manage alone": manageOnly,
			"bound to shop-2": b.newToken(t, "shop-2", auth.PaymentsRead, auth.WebhooksManage)} {
			res := call(tok, del, map[string]any{"id": made.Endpoint.ID})
			if res.code() != "FORBIDDEN" || string(res.Data["deleteWebhookEndpoint"]) != "null" {
				t.Errorf("deleting shop-1's endpoint (%s): %s %+v; want FORBIDDEN", name, res.Data["deleteWebhookEndpoint"], res.Errors)
			}
		}
		if res := call(boundReader, del, map[string]any{"id": "we_never_issued"}); res.code() != "" ||
			string(res.Data["deleteWebhookEndpoint"]) != "false" {
			t.Errorf("deleting an endpoint that does not exist: %s %+v; want false", res.Data["deleteWebhookEndpoint"], res.Errors)
		}
		if got := string(call(boundReader, `{ webhookEndpoints { id } }`, nil).Data["webhookEndpoints"]); !strings.Contains(got, made.Endpoint.ID) {
			t.Errorf("shop-1 lists %s after the refused deletes; want its endpoint still there", got)
		}
		full := call(token, `{ webhookEndpoints { url } }`, nil)
		if got := string(full.Data["webhookEndpoints"]); !strings.Contains(got, "shop-1.example") {
			t.Errorf("an unbound token with payments:read lists %s; want every client's", got)
		}
		var n int64
		db.Gorm.Table("webhook_endpoints").Where("deleted_at IS NULL").Count(&n)
		if n != 2 {
			t.Errorf("%d endpoints; want the 2 made with payments:read", n)
		}
	})
}

// A client may have at most WEBHOOK_ENDPOINTS_PER_CLIENT endpoints; other
// clients are not counted against it, and a deleted one frees its place.
func TestWebhookEndpointsPerClient(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		shop1 := b.newToken(t, "shop-1", auth.PaymentsRead, auth.WebhooksManage)
		shop2 := b.newToken(t, "shop-2", auth.PaymentsRead, auth.WebhooksManage)
		const create = `mutation($url: String!) { createWebhookEndpoint(url: $url) { endpoint { id } } }`
		call := func(tok, url string) gqlResponse {
			return b.do(t, "POST", "/graphql", tok, "application/json",
				`{"query":`+strconv.Quote(create)+`,"variables":{"url":`+strconv.Quote(url)+`}}`)
		}
		var first string
		for i := range 20 {
			res := call(shop1, "https://shop-1.example/hook/"+strconv.Itoa(i))
			if len(res.Errors) > 0 {
				t.Fatalf("endpoint %d: %+v", i+1, res.Errors)
			}
			if i == 0 {
				var made struct{ Endpoint struct{ ID string } }
				_ = json.Unmarshal(res.Data["createWebhookEndpoint"], &made)
				first = made.Endpoint.ID
			}
		}
		res := call(shop1, "https://shop-1.example/hook/21")
		if res.code() != "BAD_USER_INPUT" || !strings.Contains(res.Errors[0].Message, "20") {
			t.Errorf("a 21st endpoint: %s %+v; want BAD_USER_INPUT naming the cap", res.code(), res.Errors)
		}
		if res := call(shop2, "https://shop-2.example/hook"); len(res.Errors) > 0 {
			t.Errorf("another client's endpoint: %+v", res.Errors)
		}
		del := b.do(t, "POST", "/graphql", shop1, "application/json",
			`{"query":"mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }","variables":{"id":`+strconv.Quote(first)+`}}`)
		if string(del.Data["deleteWebhookEndpoint"]) != "true" {
			t.Fatalf("delete: %s %+v", del.Data["deleteWebhookEndpoint"], del.Errors)
		}
		if res := call(shop1, "https://shop-1.example/hook/again"); len(res.Errors) > 0 {
			t.Errorf("after a delete: %+v", res.Errors)
		}
	})
}
