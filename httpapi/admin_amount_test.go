package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// An amount typed in the admin is digits and a point: "1e1" refunded
// 10.00. It is refused with how to write it, and nothing is refunded.
func TestAdminRefusesTypedExponents(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		op := b.addStaff(t, "olga", staff.Operator)
		p := b.newPayment(t, "shop-7", "order-1", "50", true)
		page := "/admin/payments/" + p.ID
		for amount, want := range map[string]string{"1e1": "digits with an optional point", "1,50": "use a point for the decimals: 1.50"} {
			_, doc := op.get(t, page)
			res, doc := op.post(t, page+"/refund", url.Values{"amount": {amount}, "idempotency_key": {formKey(doc, "refund")}})
			if got := doc.Find("[role=alert]").Text(); res.StatusCode != http.StatusBadRequest || !strings.Contains(got, want) {
				t.Errorf("refund of %q: %d %q, want 400 saying %q", amount, res.StatusCode, got, want)
			}
		}
		if got, err := b.svc.Get(t.Context(), p.ID); err != nil || got.Refunded.Minor != 0 {
			t.Errorf("refunded %v, %v; want nothing", got.Refunded, err)
		}
	})
}
