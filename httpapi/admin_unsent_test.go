package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A form sent after the session ended goes to the sign-in with the page it
// was on as next, and the sign-in says the form was not sent; it went to
// the bare sign-in, with no word that the refund was not made.
func TestFormAfterSessionEndSaysNotSent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		c := b.newClient(t)
		for path, want := range map[string]string{
			"/admin/payments/pay_x/refund":        "/admin/login?unsent=1&next=%2Fadmin%2Fpayments%2Fpay_x",
			"/admin/tokens/tok_1/revoke":          "/admin/login?unsent=1&next=%2Fadmin%2Ftokens",
			"/admin/staff/ana/disable":            "/admin/login?unsent=1&next=%2Fadmin%2Fstaff",
			"/admin/webhooks/deliveries/1/resend": "/admin/login?unsent=1&next=%2Fadmin%2Fwebhooks",
			"/admin/logout":                       "/admin/login",
		} {
			res, _ := c.post(t, path, url.Values{"amount": {"1"}, "idempotency_key": {"k"}})
			if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != want {
				t.Errorf("POST %s: %d to %q, want 303 to %q", path, res.StatusCode, loc, want)
			}
		}
		res, doc := c.get(t, "/admin/login?unsent=1&next=%2Fadmin%2Fpayments%2Fpay_x")
		if got := strings.Join(strings.Fields(doc.Find("[role=alert]").Text()), " "); res.StatusCode != http.StatusOK ||
			!strings.Contains(got, "was not sent: nothing was done") {
			t.Errorf("sign-in after an unsent form: %d %q", res.StatusCode, got)
		}
		if next, _ := doc.Find(`input[name=next]`).Attr("value"); next != "/admin/payments/pay_x" {
			t.Errorf("next %q", next)
		}
		if _, doc := c.get(t, "/admin/login"); doc.Find("[role=alert]").Length() != 0 {
			t.Error("the plain sign-in shows a notice")
		}
	})
}
