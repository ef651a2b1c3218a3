package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// Errors never repeat an over-long input whole: not a REST path in the
// problem's instance, not an id on the admin's not-found page.
func TestErrorsClipLongInput(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	long := "pay_" + strings.Repeat("x", 50_000)
	for _, path := range []string{"/api/payments/" + long + "/capture", "/api/payments/" + long + "/refunds"} {
		res, body := b.raw(t, "POST", path, restHeaders("clip-1"), "")
		if res.StatusCode != http.StatusNotFound || len(body) > 1000 || strings.Contains(string(body), strings.Repeat("x", 300)) {
			t.Errorf("POST %.40s…: %d, %d bytes; want 404 without the path repeated", path, res.StatusCode, len(body))
			t.Logf("%.300s", body)
		}
	}
	if res, body := b.raw(t, "POST", "/api/payments/pay_short/cancel", restHeaders("clip-2"), ""); !strings.Contains(string(body), `"instance":"/api/payments/pay_short/cancel"`) {
		t.Errorf("a short path's instance: %d %s", res.StatusCode, body)
	}
	res, body := b.asAdmin(t).do(t, "GET", "/admin/payments/"+long, nil, "")
	if res.StatusCode != http.StatusNotFound || strings.Contains(string(body), strings.Repeat("x", 300)) {
		t.Errorf("the admin's page for an unknown long id: %d, %d bytes; want 404 with the id clipped", res.StatusCode, len(body))
	}
}
