package clientaddr

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	trusted, err := ParsePrefixes([]string{"10.0.0.0/8", " 192.0.2.1 ", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	r := New(trusted)
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy", "203.0.113.7:4242", nil, "203.0.113.7"},
		{"an untrusted peer's header is ignored", "203.0.113.7:4242", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted proxy, one hop", "10.1.2.3:4242", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a bare trusted address", "192.0.2.1:4242", []string{"198.51.100.1"}, "198.51.100.1"},
		{"the rightmost untrusted hop wins over a spoofed left", "10.1.2.3:4242", []string{"6.6.6.6, 198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"hops over several header lines", "10.1.2.3:4242", []string{"6.6.6.6", "198.51.100.1", "10.9.9.9"}, "198.51.100.1"},
		{"every hop trusted: the leftmost", "10.1.2.3:4242", []string{"10.7.7.7, 10.8.8.8"}, "10.7.7.7"},
		{"trusted proxy without a header", "10.1.2.3:4242", nil, "10.1.2.3"},
		{"garbage stops at the proxy that wrote it", "10.1.2.3:4242", []string{"198.51.100.1, junk"}, "10.1.2.3"},
		{"a hop with a port", "10.1.2.3:4242", []string{"198.51.100.1:5555"}, "198.51.100.1"},
		{"IPv6 peer trusted", "[fd00::1]:4242", []string{"2001:db8::7"}, "2001:db8::7"},
		{"IPv4-mapped IPv6 peer", "[::ffff:10.1.2.3]:4242", []string{"198.51.100.1"}, "198.51.100.1"},
		{"IPv6 untrusted", "[2001:db8::9]:4242", []string{"198.51.100.1"}, "2001:db8::9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			if got := r.Addr(req); got != tt.want {
				t.Errorf("Addr = %s, want %s", got, tt.want)
			}
		})
	}
	none := New(nil)
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.1.2.3:4242"
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := none.Addr(req); got != "10.1.2.3" {
		t.Errorf("with no trusted proxies, X-Forwarded-For was believed: %s", got)
	}
}

func TestParsePrefixesRefusesJunk(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := ParsePrefixes([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestHTTPS(t *testing.T) {
	t.Parallel()
	trusted, _ := ParsePrefixes([]string{"10.0.0.0/8"})
	r := New(trusted)
	tests := []struct {
		name, peer string
		proto      []string
		tls        bool
		want       bool
	}{
		{"plain", "203.0.113.7:1", nil, false, false},
		{"own TLS", "203.0.113.7:1", nil, true, true},
		{"trusted proxy says https", "10.0.0.1:1", []string{"https"}, false, true},
		{"trusted proxy says http", "10.0.0.1:1", []string{"http"}, false, false},
		{"the nearest proxy's value counts", "10.0.0.1:1", []string{"https, http"}, false, false},
		{"an untrusted peer cannot claim https", "203.0.113.7:1", []string{"https"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tt.peer
			for _, v := range tt.proto {
				req.Header.Add("X-Forwarded-Proto", v)
			}
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			if got := r.HTTPS(req); got != tt.want {
				t.Errorf("HTTPS = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	trusted, _ := ParsePrefixes([]string{"10.0.0.0/8"})
	var addr string
	var https bool
	h := New(trusted).Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		addr, https = From(r.Context()), IsHTTPS(r.Context())
	}))
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.0.0.1:1"
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	req.Header.Set("X-Forwarded-Proto", "https")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if addr != "198.51.100.1" || !https {
		t.Errorf("in context: %q, https %v", addr, https)
	}
}
