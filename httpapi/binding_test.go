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
		c := &boundToken{b: b, db: db, token: b.newToken(t, "shop-7", auth.DefaultScopes...)}
		c.mine = b.create(t, "order-1", input("shop-7", "10", "BRL", "PIX")).Payment.ID
		c.theirs = b.create(t, "order-2", input("shop-8", "10", "BRL", "PIX")).Payment.ID
		before := len(b.listed(t))

		t.Run("squatting a key of another client is refused", func(t *testing.T) {
			// With a payment of 0.01: refused, on both APIs.
			res, body := b.raw(t, "POST", "/api/payments", c.as("order-2000"), `{"clientId":"shop-8","amount":"0.01","currency":"BRL","method":"PIX"}`)
			if p := decodeProblem(t, res, body); res.StatusCode != 403 || p.Code != "FORBIDDEN" {
				t.Errorf("REST create for another client: %d %s", res.StatusCode, p.Code)
			}
			if r := c.gql(t, `mutation { createPayment(input: {clientId: "shop-8", amount: "0.01", currency: "BRL", method: PIX}, idempotencyKey: "order-2000") { replayed } }`); r.code() != "FORBIDDEN" {
				t.Errorf("GraphQL create for another client: %+v", r.Errors)
			}
		})
		t.Run("changing a payment of another client is refused", func(t *testing.T) { c.changesRefused(t, before) })
		t.Run("reading shows only payments of its client", c.readsItsOwn)
		t.Run("a payment of its client can be changed", func(t *testing.T) {
			res, body := b.raw(t, "POST", "/api/payments/"+c.mine+"/refunds", c.as("r-3"), `{"amount":"1"}`)
			if res.StatusCode != 201 {
				t.Errorf("refund of its own client's payment: %d %s", res.StatusCode, body)
			}
		})
	})
}

// boundToken is a token bound to shop-7, a payment of shop-7's (mine) and
// one of shop-8's (theirs).
type boundToken struct {
	b            *bundle
	db           dbtest.DB
	token        string
	mine, theirs string
}

// as is the REST headers of the bound token, with an idempotency key.
func (c *boundToken) as(key string) http.Header {
	return http.Header{"Authorization": {"Bearer " + c.token}, "Content-Type": {"application/json"}, "Idempotency-Key": {key}}
}

func (c *boundToken) gql(t *testing.T, query string) gqlResponse {
	t.Helper()
	return c.b.do(t, "POST", "/graphql", c.token, "application/json", mustString(t, map[string]any{"query": query}))
}

// rows counts what a change writes: idempotency keys, attempts, events.
func (c *boundToken) rows() string {
	var keys, attempts, events int64
	c.db.Gorm.Table("idempotency_keys").Count(&keys)
	c.db.Gorm.Table("idempotency_attempts").Count(&attempts)
	c.db.Gorm.Table("payment_events").Count(&events)
	return fmt.Sprintf("%d keys, %d attempts, %d events", keys, attempts, events)
}

// changesRefused: changing another client's payment is FORBIDDEN (REST
// 403) on every route, with nothing done: no key of its client claimed, no
// attempt on it, no event; and no payment made since before was counted.
// An id never issued stays NOT_FOUND.
func (c *boundToken) changesRefused(t *testing.T, before int) {
	b, theirs := c.b, c.theirs
	written := c.rows()
	for _, path := range []string{"/capture", "/cancel", "/refunds"} {
		res, body := b.raw(t, "POST", "/api/payments/"+theirs+path, c.as("r-1"+path), "")
		if p := decodeProblem(t, res, body); res.StatusCode != 403 || p.Code != "FORBIDDEN" {
			t.Errorf("REST %s of another client's payment: %d %+v; want 403 FORBIDDEN", path, res.StatusCode, p)
		}
		res, body = b.raw(t, "POST", "/api/payments/pay_never_issued"+path, c.as("r-1"+path), "")
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
			if r := c.gql(t, "mutation { "+fmt.Sprintf(m, id)+" }"); r.code() != want {
				t.Errorf("GraphQL %.14s of %s: %+v; want %s", m, id, r.Errors, want)
			}
		}
	}
	if got := c.rows(); got != written {
		t.Errorf("after the refused changes: %s; want %s, nothing written", got, written)
	}
	if got := len(b.listed(t)); got != before {
		t.Errorf("%d payments, want %d: a refused request created one", got, before)
	}
	if p := b.mustGetPayment(t, theirs); p.RefundedAmount != "0.00" {
		t.Errorf("another client's payment was refunded: %+v", p)
	}
}

// readsItsOwn: reading shows only its own client's payments.
func (c *boundToken) readsItsOwn(t *testing.T) {
	b, mine, theirs := c.b, c.mine, c.theirs
	if res, _ := b.raw(t, "GET", "/api/payments/"+theirs, c.as(""), ""); res.StatusCode != 404 {
		t.Errorf("GET another client's payment: %d, want 404", res.StatusCode)
	}
	if res, _ := b.raw(t, "GET", "/api/payments/"+mine, c.as(""), ""); res.StatusCode != 200 {
		t.Errorf("GET its own client's payment: %d, want 200", res.StatusCode)
	}
	if r := c.gql(t, `{ payment(id: "`+theirs+`") { id } }`); string(r.Data["payment"]) != "null" {
		t.Errorf("payment(id:) of another client's payment: %s, want null", r.Data["payment"])
	}
	list := string(c.gql(t, `{ payments(first: 100) { edges { node { id } } } }`).Data["payments"])
	if !strings.Contains(list, mine) || strings.Contains(list, theirs) {
		t.Errorf("the listing shows %s; want shop-7's payment only", list)
	}
	// Listing another client's payments is FORBIDDEN, as subscribing to
	// its events is (the contract's "beyond its client"); its own, named,
	// lists them.
	if r := c.gql(t, `{ payments(filter: {clientId: "shop-8"}) { edges { node { id } } } }`); r.code() != "FORBIDDEN" ||
		strings.Contains(string(r.Data["payments"]), theirs) {
		t.Errorf("a filter on another client: %s %+v; want FORBIDDEN", r.Data["payments"], r.Errors)
	}
	if own := string(c.gql(t, `{ payments(filter: {clientId: "shop-7"}) { edges { node { id } } } }`).Data["payments"]); !strings.Contains(own, mine) {
		t.Errorf("a filter on its own client shows %s; want %s", own, mine)
	}
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
