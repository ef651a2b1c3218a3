package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// Browsers ask every host for /favicon.ico: it is an icon, open to all,
// not a 404 on every page.
func TestFavicon(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res, body := b.raw(t, "GET", "/favicon.ico", http.Header{}, "")
	if res.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte{0, 0, 1, 0}) {
		t.Fatalf("GET /favicon.ico: %d, %d bytes starting %x; want an ICO file", res.StatusCode, len(body), body[:min(len(body), 4)])
	}
	if ct := res.Header.Get("Content-Type"); ct != "image/x-icon" && ct != "image/vnd.microsoft.icon" {
		t.Errorf("Content-Type %q", ct)
	}
}
