package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Asset folders serve their files and never a listing of what they hold.
func TestStaticFoldersDoNotList(t *testing.T) {
	t.Parallel()
	admin, assets := Admin(nil), PlaygroundAssets()
	tests := []struct {
		name    string
		handler http.Handler
		path    string
		status  int
	}{
		{"an admin file", admin, "/admin/static/admin.css", 200},
		{"the admin folder", admin, "/admin/static/", 404},
		{"the admin folder without a slash", admin, "/admin/static", 404},
		{"a playground file", assets, "/playground/assets/playground.js", 200},
		{"the playground folder", assets, "/playground/assets/", 404},
		{"the playground folder again", assets, "/playground/assets/./", 404},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		tt.handler.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
		if rec.Code >= 300 && rec.Code < 400 {
			// A redirect to the folder: follow it once.
			rec2 := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec2, httptest.NewRequest("GET", rec.Header().Get("Location"), nil))
			rec = rec2
		}
		if rec.Code != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, rec.Code, tt.status)
		}
		if tt.status != 200 && strings.Contains(rec.Body.String(), "<a href=") {
			t.Errorf("%s: a listing: %.200s", tt.name, rec.Body)
		}
	}
}

// A path the admin does not have gets the admin's own page, as HTML, with
// its security headers; not text/plain.
func TestAdminNotFoundPage(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/admin/nope", "/admin/payments", "/admin/payments/x/y"} {
		rec := httptest.NewRecorder()
		Admin(nil).ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "CMPay admin") || !strings.Contains(body, "Page not found") ||
			rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %d %v\n%.300s", path, rec.Code, rec.Header(), body)
		}
	}
}
