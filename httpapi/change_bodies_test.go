package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// Each change route names its own fields when refusing one it does not
// take: a capture takes amount, a refund amount and reason, a cancel none
// (no body, or {}); nothing is applied by a refused body.
func TestChangeRoutesNameTheirOwnFields(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	in := input("shop-1", "10.00", "BRL", "CREDIT_CARD")
	in["capture"] = false
	id := b.create(t, "bodies-1", in).Payment.ID
	for _, tt := range []struct {
		route, body string
		want        []string // in the message
		notWant     []string
	}{
		{"cancel", `{"x":1}`, []string{`"x"`, "takes no fields", "no body"}, []string{"amount", "reason"}},
		{"cancel", `{"amount":"1.00"}`, []string{`"amount"`, "takes no fields"}, []string{"reason"}},
		{"cancel", `{"<odd>":1}`, []string{"takes no fields"}, []string{"amount", "reason", "odd"}},
		{"cancel", `[]`, []string{"takes no fields"}, []string{"amount", "reason"}},
		{"capture", `{"x":1}`, []string{`"x"`, "it takes amount,"}, []string{"reason"}},
		{"capture", `{"reason":"r"}`, []string{`"reason"`, "it takes amount,"}, nil},
		{"refunds", `{"x":1}`, []string{`"x"`, "it takes amount, reason"}, nil},
	} {
		res, body := b.raw(t, "POST", "/api/payments/"+id+"/"+tt.route, restHeaders("bodies-"+tt.route+tt.body), tt.body)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: %d %s, want 400", tt.route, tt.body, res.StatusCode, body)
			continue
		}
		p := decodeProblem(t, res, body)
		for _, w := range tt.want {
			if !strings.Contains(p.Detail, w) {
				t.Errorf("%s %s: %q lacks %q", tt.route, tt.body, p.Detail, w)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(p.Detail, w) {
				t.Errorf("%s %s: %q names %q", tt.route, tt.body, p.Detail, w)
			}
		}
	}
	if got := b.payment(t, id); got.Status != payments.StatusAuthorized {
		t.Fatalf("after refused bodies the payment is %s", got.Status)
	}
	// A cancel with an empty object applies, as one with no body does.
	if res, body := b.raw(t, "POST", "/api/payments/"+id+"/cancel", restHeaders("bodies-cancel"), `{}`); res.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"status":"CANCELED"`) {
		t.Errorf("cancel with {}: %d %s, want 200 CANCELED", res.StatusCode, body)
	}
}
