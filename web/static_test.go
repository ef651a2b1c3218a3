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
	admin, assets := Admin(AdminDeps{}), PlaygroundAssets()
	tests := []struct {
		name    string
		handler http.Handler
		path    string
		status  int
	}{
		{"an admin file", admin, "/admin/static/admin.css", 200},
		{"the admin folder", admin, "/admin/static/", 404},
		{"the admin folder without a slash", admin, "/admin/static", 200}, // an admin path: sent to the sign-in page
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
