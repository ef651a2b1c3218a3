package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// A token bound to a client sees only that client's payments, may only
// create or change that client's payments, and so cannot squat another
// client's idempotency key.
func TestTokenBoundToAClient(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		shop7 := b.newToken(t, "shop-7", auth.DefaultScopes...)
		mine := b.create(t, "order-1", input("shop-7", "10", "BRL", "PIX")).Payment.ID
		theirs := b.create(t, "order-2", input("shop-8", "10", "BRL", "PIX")).Payment.ID
		before := len(b.listed(t))

		as := func(key string) http.Header {
			return http.Header{"Authorization": {"Bearer " + shop7}, "Content-Type": {"application/json"}, "Idempotency-Key": {key}}
		}
		gql := func(query string) gqlResponse {
			t.Helper()
			return b.do(t, "POST", "/graphql", shop7, "application/json", mustString(t, map[string]any{"query": query}))
		}

		// Squatting shop-8's key with a payment of 0.01: refused, on both APIs.
		res, body := b.raw(t, "POST", "/api/payments", as("order-2000"), `{"clientId":"shop-8","amount":"0.01","currency":"BRL","method":"PIX"}`)
		if p := decodeProblem(t, res, body); res.StatusCode != 403 || p.Code != "FORBIDDEN" {
			t.Errorf("REST create for another client: %d %s", res.StatusCode, p.Code)
		}
		if r := gql(`mutation { createPayment(input: {clientId: "shop-8", amount: "0.01", currency: "BRL", method: PIX}, idempotencyKey: "order-2000") { replayed } }`); r.code() != "FORBIDDEN" {
			t.Errorf("GraphQL create for another client: %+v", r.Errors)
		}
		// Changing another client's payment: FORBIDDEN (REST 403) on every
		// route, with nothing done: no key of its client claimed, no
		// attempt on it, no event. An id never issued stays NOT_FOUND.
		rows := func() string {
			var keys, attempts, events int64
			db.Gorm.Table("idempotency_keys").Count(&keys)
			db.Gorm.Table("idempotency_attempts").Count(&attempts)
			db.Gorm.Table("payment_events").Count(&events)
			return fmt.Sprintf("%d keys, %d attempts, %d events", keys, attempts, events)
		}
		written := rows()
		for _, path := range []string{"/capture", "/cancel", "/refunds"} {
			res, body := b.raw(t, "POST", "/api/payments/"+theirs+path, as("r-1"+path), "")
			if p := decodeProblem(t, res, body); res.StatusCode != 403 || p.Code != "FORBIDDEN" {
				t.Errorf("REST %s of another client's payment: %d %+v; want 403 FORBIDDEN", path, res.StatusCode, p)
			}
			res, body = b.raw(t, "POST", "/api/payments/pay_never_issued"+path, as("r-1"+path), "")
			if p := decodeProblem(t, res, body); res.StatusCode != 404 || p.Code != "NOT_FOUND" || p.Detail != "no such payment" {
				t.Errorf("REST %s of an id never issued: %d %+v; want 404 NOT_FOUND, no such payment", path, res.StatusCode, p)
			}
		}
		for _, m := range []string{
			`capturePayment(paymentId: "%s", idempotencyKey: "r-2") { replayed }`,
			`cancelPayment(paymentId: "%s", idempotencyKey: "r-3") { replayed }`,
			`refundPayment(paymentId: "%s", idempotencyKey: "r-4") { replayed }`,
		} {
			for id, want := range map[string]string{theirs: "FORBIDDEN", "pay_never_issued": "NOT_FOUND"} {
				if r := gql("mutation { " + fmt.Sprintf(m, id) + " }"); r.code() != want {
					t.Errorf("GraphQL %.14s of %s: %+v; want %s", m, id, r.Errors, want)
				}
			}
		}
		if got := rows(); got != written {
			t.Errorf("after the refused changes: %s; want %s, nothing written", got, written)
		}
		if got := len(b.listed(t)); got != before {
			t.Errorf("%d payments, want %d: a refused request created one", got, before)
		}
		if p := b.mustGetPayment(t, theirs); p.RefundedAmount != "0.00" {
			t.Errorf("another client's payment was refunded: %+v", p)
		}

		// Reading: only its own client's payments.
		if res, _ := b.raw(t, "GET", "/api/payments/"+theirs, as(""), ""); res.StatusCode != 404 {
			t.Errorf("GET another client's payment: %d, want 404", res.StatusCode)
		}
		if res, _ := b.raw(t, "GET", "/api/payments/"+mine, as(""), ""); res.StatusCode != 200 {
			t.Errorf("GET its own client's payment: %d, want 200", res.StatusCode)
		}
		if r := gql(`{ payment(id: "` + theirs + `") { id } }`); string(r.Data["payment"]) != "null" {
			t.Errorf("payment(id:) of another client's payment: %s, want null", r.Data["payment"])
		}
		list := string(gql(`{ payments(first: 100) { edges { node { id } } } }`).Data["payments"])
		if !strings.Contains(list, mine) || strings.Contains(list, theirs) {
			t.Errorf("the listing shows %s; want shop-7's payment only", list)
		}
		// Listing another client's payments is FORBIDDEN, as subscribing to
		// its events is (the contract's "beyond its client"); its own, named,
		// lists them.
		if r := gql(`{ payments(filter: {clientId: "shop-8"}) { edges { node { id } } } }`); r.code() != "FORBIDDEN" ||
			strings.Contains(string(r.Data["payments"]), theirs) {
			t.Errorf("a filter on another client: %s %+v; want FORBIDDEN", r.Data["payments"], r.Errors)
		}
		if own := string(gql(`{ payments(filter: {clientId: "shop-7"}) { edges { node { id } } } }`).Data["payments"]); !strings.Contains(own, mine) {
			t.Errorf("a filter on its own client shows %s; want %s", own, mine)
		}
		// Its own client: everything works.
		res, body = b.raw(t, "POST", "/api/payments/"+mine+"/refunds", as("r-3"), `{"amount":"1"}`)
		if res.StatusCode != 201 {
			t.Errorf("refund of its own client's payment: %d %s", res.StatusCode, body)
		}
	})
}

func mustString(t *testing.T, v any) string {
	t.Helper()
	return string(mustJSON(t, v))
}

// mustGetPayment reads a payment over REST with the full-access token.
func (b *bundle) mustGetPayment(t *testing.T, id string) (p struct{ Status, RefundedAmount string }) {
	t.Helper()
	res, body := b.raw(t, "GET", "/api/payments/"+id, restHeaders(""), "")
	if res.StatusCode != 200 || json.Unmarshal(body, &p) != nil {
		t.Fatalf("GET %s: %d %s", id, res.StatusCode, body)
	}
	return p
}
