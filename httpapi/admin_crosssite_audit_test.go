package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// A cross-site request refused while a staff member was signed in is in
// the audit log under that staff member: their browser was made to send a
// forged form, and the log kept no trace of it.
func TestAdminCrossSiteIsAudited(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		op := b.addStaff(t, "olga", staff.Operator)
		p := b.newPayment(t, "shop", "order-1", "50", true)
		h := http.Header{"Origin": {"https://evil.example"}, "Content-Type": {"application/x-www-form-urlencoded"}}
		form := url.Values{"amount": {"5"}, "idempotency_key": {"admin-cross"}}.Encode()
		if res, _ := op.do(t, "POST", "/admin/payments/"+p.ID+"/refund", h, form); res.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site refund: %d", res.StatusCode)
		}
		if res, _ := b.newClient(t).do(t, "POST", "/admin/payments/"+p.ID+"/refund", h, form); res.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-site refund without a session: %d", res.StatusCode)
		}
		got := b.auditLines(t, "?actor=olga&action=refund")
		want := "refund|olga|127.0.0.1|" + p.ID + "|denied|refused as cross-site, nothing was done (Sec-Fetch-Site none, Origin https://evil.example)"
		if len(got) != 1 || got[0] != want {
			t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(got, "\n"), want)
		}
	})
}
