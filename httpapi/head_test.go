package httpapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// HEAD on a path that takes GET is answered as GET is, without the body
// (RFC 9110, 9.3.2): the same status and headers, credentials required
// the same way. Monitors and caches check a URL with HEAD; a 405 there read
// as the route being gone.
func TestHeadIsAnsweredAsGet(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	paid := b.create(t, "head-1", input("head", "10.00", "BRL", "PIX")).Payment.ID
	head := func(path string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodHead, b.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		res, err := b.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}
	for _, tt := range []struct {
		path   string
		header http.Header
		status int
	}{
		{"/api/payments/" + paid, restHeaders(""), http.StatusOK},
		{"/api/payments/pay_missing", restHeaders(""), http.StatusNotFound},
		{"/api/payments/" + paid + "/refunds/ref_missing", restHeaders(""), http.StatusNotFound},
		{"/api/payments/" + paid, nil, http.StatusUnauthorized},
		{"/healthz", nil, http.StatusOK},
		{"/api/openapi.json", nil, http.StatusOK},
	} {
		get, getBody := b.raw(t, http.MethodGet, tt.path, tt.header, "")
		res, body := head(tt.path, tt.header)
		if get.StatusCode != tt.status || res.StatusCode != tt.status {
			t.Errorf("%s: GET %d, HEAD %d; want %d for both", tt.path, get.StatusCode, res.StatusCode, tt.status)
		}
		if len(body) != 0 {
			t.Errorf("HEAD %s: a body of %d bytes", tt.path, len(body))
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Cache-Control", "WWW-Authenticate", "X-Content-Type-Options"} {
			if res.Header.Get(h) != get.Header.Get(h) {
				t.Errorf("HEAD %s: %s %q, GET's %q", tt.path, h, res.Header.Get(h), get.Header.Get(h))
			}
		}
		if len(getBody) == 0 {
			t.Errorf("GET %s: no body", tt.path)
		}
	}

	// A path without GET refuses HEAD too, naming what it takes.
	res, _ := head("/api/payments", restHeaders("head-2"))
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD /api/payments: %d, Allow %q; want 405, Allow POST", res.StatusCode, res.Header.Get("Allow"))
	}
}
