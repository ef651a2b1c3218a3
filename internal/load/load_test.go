package load

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// The hand-built body must be the JSON a client library would send.
func TestBodyIsTheRequestAsJSON(t *testing.T) {
	for _, tt := range []struct{ key, amount string }{
		{"run-1-seed-0", "10.00"},
		{`a "quoted" \\ key`, "99.99"},
	} {
		var got map[string]any
		if err := json.Unmarshal(body(tt.key, tt.amount), &got); err != nil {
			t.Fatalf("body(%q) is not JSON: %v", tt.key, err)
		}
		want := map[string]any{
			"query": mutation,
			"variables": map[string]any{
				"key": tt.key,
				"in":  map[string]any{"clientId": "load", "amount": tt.amount, "currency": "BRL", "method": "PIX"},
			},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body(%q) = %v, want %v", tt.key, got, want)
		}
	}
}

// readResponse must read what net/http's server writes: a sized body, a
// chunked one, and the end of a connection.
func TestReadResponseReadsWhatNetHTTPWrites(t *testing.T) {
	big := strings.Repeat("x", 10_000) // too big for net/http to size: sent chunked
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Write([]byte(`{"data":{"createPayment":{"replayed":true}}}`))
		case "/big":
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(big[:5000]))
			w.(http.Flusher).Flush()
			w.Write([]byte(big[5000:]))
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		}
	}))
	defer srv.Close()
	nc, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	for _, tt := range []struct {
		path    string
		status  int
		body    string
		closing bool
	}{
		{"/small", 200, `{"data":{"createPayment":{"replayed":true}}}`, false},
		{"/big", 418, big, false},
		{"/small", 200, `{"data":{"createPayment":{"replayed":true}}}`, false}, // the connection is still in step
		{"/close", 200, "bye", true},
	} {
		if _, err := fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", tt.path); err != nil {
			t.Fatal(err)
		}
		status, body, closing, err := readResponse(r)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if status != tt.status || string(body) != tt.body || closing != tt.closing {
			t.Errorf("%s: status %d, %d bytes, closing %v; want %d, %d bytes, %v", tt.path, status, len(body), closing, tt.status, len(tt.body), tt.closing)
		}
	}
}
