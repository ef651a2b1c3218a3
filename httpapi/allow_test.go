package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A 405 names the methods the path takes in Allow, as RFC 9110 (15.5.6)
// requires of it: a client sent the wrong method learns the right one
// from the header, not from the problem's prose.
func TestMethodNotAllowedSaysAllow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, tt := range []struct{ method, path, allow string }{
			{"GET", "/api/payments", "POST"},
			{"DELETE", "/api/payments/pay_x", "GET, HEAD"},
			{"PUT", "/api/payments/pay_x/refunds", "POST"},
			{"GET", "/api/payments/pay_x/capture", "POST"},
			{"HEAD", "/api/payments/pay_x/cancel", "POST"},
			{"POST", "/api/openapi.json", "GET, HEAD"},
			{"POST", "/healthz", "GET, HEAD"},
		} {
			res, _ := b.raw(t, tt.method, tt.path, restHeaders(""), "")
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tt.allow {
				t.Errorf("%s %s: %d, Allow %q; want 405, Allow %q", tt.method, tt.path, res.StatusCode, res.Header.Get("Allow"), tt.allow)
			}
		}
	})
}
