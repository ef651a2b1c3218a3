package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
)

// gqlAs sends a GraphQL request with the bearer token tok.
func (b *bundle) gqlAs(t *testing.T, tok, query string, vars map[string]any) gqlResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	return b.do(t, "POST", "/graphql", tok, "application/json", string(body))
}

// A payments:create token, the one a shopper's page holds, creates
// payments, gets them back under the same key, and reads one by its id;
// over REST and GraphQL alike.
func TestCreateScopeCreatesReplaysAndReads(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		page := b.newToken(t, "shop-1", auth.PaymentsCreate)
		as := func(key string) http.Header {
			return http.Header{"Authorization": {"Bearer " + page}, "Content-Type": {"application/json"}, "Idempotency-Key": {key}}
		}
		const body = `{"clientId":"shop-1","amount":"10.50","currency":"BRL","method":"CREDIT_CARD","paymentMethodToken":"pm_card_visa"}`
		res, created := b.raw(t, "POST", "/api/payments", as("checkout-rest"), body)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("REST create: %d %s", res.StatusCode, created)
		}
		res, replayed := b.raw(t, "POST", "/api/payments", as("checkout-rest"), body)
		if res.StatusCode != http.StatusOK || res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("REST replay: %d %s", res.StatusCode, replayed)
		}
		var p struct{ ID, Status string }
		if err := json.Unmarshal(created, &p); err != nil {
			t.Fatal(err)
		}
		if res, got := b.raw(t, "GET", "/api/payments/"+p.ID, as(""), ""); res.StatusCode != http.StatusOK || !strings.Contains(string(got), p.ID) {
			t.Errorf("REST GET by id: %d %s", res.StatusCode, got)
		}

		const create = `mutation($key: String!) { createPayment(input: {clientId: "shop-1", amount: "3", currency: "BRL", method: PIX}, idempotencyKey: $key) { replayed payment { id status } } }`
		var first, again struct {
			Replayed bool
			Payment  struct{ ID, Status string }
		}
		r := b.gqlAs(t, page, create, map[string]any{"key": "checkout-gql"})
		if len(r.Errors) > 0 || json.Unmarshal(r.Data["createPayment"], &first) != nil || first.Replayed || first.Payment.ID == "" {
			t.Fatalf("GraphQL create: %+v %s", r.Errors, r.Data["createPayment"])
		}
		r = b.gqlAs(t, page, create, map[string]any{"key": "checkout-gql"})
		if len(r.Errors) > 0 || json.Unmarshal(r.Data["createPayment"], &again) != nil || !again.Replayed || again.Payment.ID != first.Payment.ID {
			t.Errorf("GraphQL replay: %+v %s", r.Errors, r.Data["createPayment"])
		}
		r = b.gqlAs(t, page, `query($id: ID!) { payment(id: $id) { id status } }`, map[string]any{"id": first.Payment.ID})
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data["payment"]), first.Payment.ID) {
			t.Errorf("GraphQL payment(id:): %+v %s", r.Errors, r.Data["payment"])
		}

		// Within its client, as any bound token: another client's payment
		// is not found by its id.
		theirs := b.newPayment(t, "shop-2", "theirs", "5", true)
		if res, _ := b.raw(t, "GET", "/api/payments/"+theirs.ID, as(""), ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("REST GET of another client's payment: %d, want 404", res.StatusCode)
		}
		r = b.gqlAs(t, page, `query($id: ID!) { payment(id: $id) { id } }`, map[string]any{"id": theirs.ID})
		if string(r.Data["payment"]) != "null" {
			t.Errorf("payment(id:) of another client's payment: %s %+v, want null", r.Data["payment"], r.Errors)
		}
	})
}

// Everything else is refused to a payments:create token, with nothing
// done: listing, looking up by idempotency key (keys are often order
// numbers, guessable), capture, cancel, refund, events, webhooks. A key
// another payment holds is refused without naming that payment.
func TestCreateScopeRefusesTheRest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		page := b.newToken(t, "shop-1", auth.PaymentsCreate)
		authorized := b.newPayment(t, "shop-1", "order-1001", "20", false)
		captured := b.newPayment(t, "shop-1", "order-1002", "30", true)
		hook := b.mustGQL(t, `mutation { createWebhookEndpoint(url: "https://shop.example/hooks") { endpoint { id } } }`, nil)
		var endpoint struct{ Endpoint struct{ ID string } }
		if err := json.Unmarshal(hook["createWebhookEndpoint"], &endpoint); err != nil {
			t.Fatal(err)
		}

		as := func(key string) http.Header {
			return http.Header{"Authorization": {"Bearer " + page}, "Content-Type": {"application/json"}, "Idempotency-Key": {key}}
		}
		rest := []struct{ name, method, path, body string }{
			{"capture", "POST", "/api/payments/" + authorized.ID + "/capture", `{}`},
			{"cancel", "POST", "/api/payments/" + authorized.ID + "/cancel", `{}`},
			{"refund", "POST", "/api/payments/" + captured.ID + "/refunds", `{"amount":"1"}`},
			{"read a refund", "GET", "/api/payments/" + captured.ID + "/refunds/ref_x", ``},
		}
		for _, tt := range rest {
			res, out := b.raw(t, tt.method, tt.path, as("page-"+tt.name), tt.body)
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("REST %s: %d %s, want 403", tt.name, res.StatusCode, out)
				continue
			}
			if p := decodeProblem(t, res, out); p.Code != "FORBIDDEN" || !strings.Contains(p.Detail, "scope") {
				t.Errorf("REST %s: %+v, want FORBIDDEN naming the scope", tt.name, p)
			}
		}

		gql := []struct {
			name, query string
			vars        map[string]any
		}{
			{"list", `{ payments { edges { node { id } } } }`, nil},
			{"lookup by key", `query($key: String!) { payments(filter: {clientId: "shop-1", idempotencyKey: $key}) { edges { node { id } } } }`,
				map[string]any{"key": "order-1001"}},
			{"list beside a read", `query($id: ID!) { payment(id: $id) { id } payments { edges { node { id } } } }`, map[string]any{"id": authorized.ID}},
			{"capture", captureMutation, map[string]any{"id": authorized.ID, "key": "page-capture"}},
			{"cancel", `mutation($id: ID!) { cancelPayment(paymentId: $id, idempotencyKey: "page-cancel") { replayed } }`, map[string]any{"id": authorized.ID}},
			{"refund", refundMutation, map[string]any{"id": captured.ID, "key": "page-refund", "amount": "1"}},
			{"webhook endpoints", `{ webhookEndpoints { id url } }`, nil},
			{"create a webhook endpoint", `mutation { createWebhookEndpoint(url: "https://evil.example/hooks") { secret } }`, nil},
			{"delete a webhook endpoint", `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }`, map[string]any{"id": endpoint.Endpoint.ID}},
		}
		for _, tt := range gql {
			r := b.gqlAs(t, page, tt.query, tt.vars)
			if r.code() != "FORBIDDEN" || len(r.Data) > 0 && !allNull(r.Data) {
				t.Errorf("GraphQL %s: %d %+v %s, want FORBIDDEN and no data", tt.name, r.Status, r.Errors, mustString(t, r.Data))
			}
		}

		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		stream, err := streamtest.DialSSE(ctx, b.srv.Client(), b.srv.URL, "Bearer "+page, streamtest.EventsQuery, map[string]any{"client": "shop-1", "after": "0"})
		if err != nil {
			t.Fatal(err)
		}
		events, _ := io.ReadAll(stream.Response.Body)
		stream.Close()
		if !strings.Contains(string(events), "FORBIDDEN") || strings.Contains(string(events), authorized.ID) {
			t.Errorf("a subscription: %d %s, want FORBIDDEN and no event", stream.Response.StatusCode, events)
		}

		// The key of another shopper's order, with other parameters: refused
		// as for any token, but without naming the payment the key holds.
		res, out := b.raw(t, "POST", "/api/payments", as("order-1001"), `{"clientId":"shop-1","amount":"1","currency":"BRL","method":"PIX"}`)
		if p := decodeProblem(t, res, out); res.StatusCode != http.StatusConflict || p.Code != "IDEMPOTENCY_KEY_REUSED" ||
			strings.Contains(string(out), authorized.ID) || !slices.Contains(p.DifferingFields, "amount") {
			t.Errorf("REST create under a taken key: %d %s", res.StatusCode, out)
		}
		r := b.gqlAs(t, page, `mutation { createPayment(input: {clientId: "shop-1", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "order-1002") { replayed } }`, nil)
		if _, named := r.Errors[0].Extensions["paymentId"]; r.code() != "IDEMPOTENCY_KEY_REUSED" || named || strings.Contains(mustString(t, r.Errors), captured.ID) {
			t.Errorf("GraphQL create under a taken key: %+v", r.Errors)
		}
		// payments:write still names it, as before.
		write := b.newToken(t, "shop-1", auth.PaymentsWrite)
		r = b.gqlAs(t, write, `mutation { createPayment(input: {clientId: "shop-1", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "order-1002") { replayed } }`, nil)
		if r.code() != "IDEMPOTENCY_KEY_REUSED" || r.Errors[0].Extensions["paymentId"] != captured.ID {
			t.Errorf("a payments:write token's create under a taken key: %+v", r.Errors)
		}

		// Nothing was done.
		if p := b.payment(t, authorized.ID); p.Status != "AUTHORIZED" {
			t.Errorf("the authorized payment is %s", p.Status)
		}
		if p := b.mustGetPayment(t, captured.ID); p.Status != "CAPTURED" || p.RefundedAmount != "0.00" {
			t.Errorf("the captured payment: %+v", p)
		}
		if l := string(b.mustGQL(t, `{ webhookEndpoints { id url } }`, nil)["webhookEndpoints"]); !strings.Contains(l, endpoint.Endpoint.ID) || strings.Contains(l, "evil") {
			t.Errorf("webhook endpoints: %s", l)
		}
		var n int64
		db.Gorm.Table("payments").Count(&n)
		if n != 2 {
			t.Errorf("%d payments, want the 2 made with the full token", n)
		}
	})
}

// The admin's token page offers payments:create, makes a token with it
// alone, and lists it with it; the token creates and lists nothing.
func TestAdminTokensPageCreateScope(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		admin := b.asAdmin(t)
		if _, form := admin.get(t, "/admin/tokens"); form.Find(`input[type=checkbox][name=scope][value="payments:create"]`).Length() != 1 {
			t.Fatal("the form offers no payments:create")
		}
		res, doc := admin.post(t, "/admin/tokens", url.Values{"name": {"shop-7 page"}, "client": {"shop-7"}, "scope": {"payments:create"}})
		secret := doc.Find("code.password").Text()
		if res.StatusCode != http.StatusOK || secret == "" {
			t.Fatalf("make a token: %d, secret %q", res.StatusCode, secret)
		}
		_, list := admin.get(t, "/admin/tokens")
		row := list.Find("table.tokens tbody tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.Contains(s.Text(), "shop-7 page")
		})
		if row.Length() != 1 || strings.TrimSpace(row.Find(`td[data-label="Scopes"]`).Text()) != "payments:create" {
			t.Fatalf("the list shows %q", row.Text())
		}
		as := http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}, "Idempotency-Key": {"page-1"}}
		if res, body := b.raw(t, "POST", "/api/payments", as, `{"clientId":"shop-7","amount":"1","currency":"BRL","method":"PIX"}`); res.StatusCode != 201 {
			t.Errorf("the token creates: %d %s, want 201", res.StatusCode, body)
		}
		if r := b.gqlAs(t, secret, `{ payments { edges { node { id } } } }`, nil); r.code() != "FORBIDDEN" {
			t.Errorf("the token lists: %+v, want FORBIDDEN", r.Errors)
		}
	})
}

// allNull reports whether every field of data is null.
func allNull(data map[string]json.RawMessage) bool {
	for _, v := range data {
		if string(v) != "null" {
			return false
		}
	}
	return true
}
