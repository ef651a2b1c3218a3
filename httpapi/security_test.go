package httpapi_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
)

// open lists what answers without credentials: the health check and the
// Playground page with its assets (its requests to /graphql need a token).
var open = map[string]bool{
	"GET /healthz":             true,
	"GET /playground":          true,
	"GET /playground/assets/*": true,
	"GET /api/openapi.json":    true,
	"GET /favicon.ico":         true,
}

// TestEveryRouteNeedsCredentials walks every route the router knows and
// calls it with no credentials, wrong ones, two Authorization headers (refused
// on every route), and a token whose scopes open none of them: all but the
// open routes refuse and run nothing. No debug endpoint is among the routes.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 1_000_000 })
	scopeless := b.newToken(t, "", auth.WebhooksManage)
	routes, ok := b.handler.(chi.Routes)
	if !ok {
		t.Fatalf("the handler is a %T, not a router that can be walked", b.handler)
	}
	is := func(codes ...int) func(int) bool { return func(c int) bool { return slices.Contains(codes, c) } }
	cases := []struct {
		name   string
		header http.Header
		want   func(status int) bool
	}{
		{"no credentials", http.Header{}, is(401)},
		{"a wrong token", http.Header{"Authorization": {"Bearer wrong"}}, is(401)},
		{"a wrong password", http.Header{"Authorization": {"Basic " + basic("admin", "wrong")}}, is(401)},
		{"two Authorization headers", http.Header{"Authorization": {"Bearer " + token, "Bearer " + token}}, is(400, 401)},
		{"a token without the scope", http.Header{"Authorization": {"Bearer " + scopeless}}, func(c int) bool { return c < 200 || c >= 300 }},
	}
	walked := 0
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked++
		if strings.HasPrefix(route, "/debug") {
			t.Errorf("%s %s: debug endpoints belong on DEBUG_ADDR, not the public listener", method, route)
		}
		path := strings.NewReplacer("{id}", "pay_x", "/playground/assets/*", "/playground/assets/playground.js", "/*", "/x").Replace(route)
		methods := []string{method}
		if method == "*" {
			methods = []string{"GET", "POST", "PUT", "DELETE"}
		}
		for _, m := range methods {
			for _, c := range cases {
				req := httptest.NewRequest(m, path, strings.NewReader(`{}`))
				req.Header = c.header.Clone()
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "walk")
				rec := httptest.NewRecorder()
				b.handler.ServeHTTP(rec, req)
				if c.name == "two Authorization headers" { // refused everywhere, open routes and the admin UI too
					if !c.want(rec.Code) {
						t.Errorf("%s %s with %s: %d, want 400 or 401", m, path, c.name, rec.Code)
					}
					continue
				}
				if open[m+" "+route] {
					if rec.Code != http.StatusOK {
						t.Errorf("%s %s is meant to be open, got %d", m, path, rec.Code)
					}
					continue
				}
				if m == http.MethodOptions && c.header.Get("Authorization") == "Bearer "+scopeless {
					continue // signed in, it may ask what /graphql allows; nothing runs
				}
				// The admin UI, whose staff sign in with a form, sends the
				// browser to it instead, whatever credentials came along.
				if strings.HasPrefix(route, "/admin") {
					if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/login") {
						t.Errorf("%s %s with %s: %d to %q, want 303 to the sign-in", m, path, c.name, rec.Code, loc)
					}
					continue
				}
				if !c.want(rec.Code) {
					t.Errorf("%s %s with %s: %d %.120s", m, path, c.name, rec.Code, rec.Body)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if walked < 10 {
		t.Errorf("walked only %d routes", walked)
	}
	var n int64
	b.db.Gorm.Table("payments").Count(&n)
	if n != 0 {
		t.Errorf("requests without credentials created %d payments", n)
	}
}

// signIn sends a GraphQL request from addr (the TCP peer) with the given
// Authorization header and extra headers.
func signIn(h http.Handler, path, addr, authorization string, extra ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(`{"query":"{ __typename }"}`))
	if path != "/graphql" {
		req = httptest.NewRequest("GET", path, nil)
	}
	req.RemoteAddr = addr + ":4242"
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Add(extra[i], extra[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestFailedSignInsAreLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 5 })
	call := func(addr, authorization string) *httptest.ResponseRecorder {
		return signIn(b.handler, "/graphql", addr, authorization)
	}
	for i := range 5 {
		if rec := call("203.0.113.7", fmt.Sprintf("Bearer guess-%d", i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
	}
	rec := call("203.0.113.7", "Bearer guess-6")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "RATE_LIMITED") {
		t.Errorf("a 6th failure from the address: %d %v %s; want 429 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	// The good client behind the same address (a NAT, a proxy) still gets
	// in: failures of others never lock it out.
	if rec := call("203.0.113.7", "Bearer "+token); rec.Code != http.StatusOK {
		t.Errorf("the right token from a limited address: %d %s, want 200", rec.Code, rec.Body)
	}
	// The admin's sign-in form counts by the address's failures for the
	// account it names (TestSignInLimitStopsGuessing): token guesses from
	// the address do not block it.
	if adm := formSignIn(b.handler, "203.0.113.7", "admin", "guess"); adm.Code != http.StatusUnauthorized {
		t.Errorf("a wrong admin password from an address limited for tokens: %d, want 401", adm.Code)
	}
	if adm := formSignIn(b.handler, "203.0.113.7", "admin", adminPassword); adm.Code != http.StatusSeeOther {
		t.Errorf("the right admin password from an address limited for tokens: %d, want 303", adm.Code)
	}
	// Other addresses and successful requests are not affected.
	if rec := call("198.51.100.1", "Bearer wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a failure from another address: %d, want 401", rec.Code)
	}
	for range 20 {
		if rec := call("198.51.100.2", "Bearer "+token); rec.Code != http.StatusOK {
			t.Fatalf("successful requests must not be limited: %d", rec.Code)
		}
	}
}

// An attacker who spreads guesses at one account over many addresses is
// counted by the identity it claims: HTTP Basic on /metrics, and the
// admin's sign-in form, share the account's budget.
func TestFailuresAreCountedPerIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 5 })
	for i := range 5 {
		if rec := signIn(b.handler, "/metrics", fmt.Sprintf("203.0.113.%d", i+1), "Basic "+basic("admin", fmt.Sprint("guess", i))); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
	}
	if rec := signIn(b.handler, "/metrics", "203.0.113.99", "Basic "+basic("admin", "guess-again")); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a 6th guess at admin from a 6th address: %d, want 429", rec.Code)
	}
	if rec := signIn(b.handler, "/metrics", "203.0.113.100", "Basic "+basic("admin", adminPassword)); rec.Code != http.StatusOK {
		t.Errorf("the right admin password: %d, want 200", rec.Code)
	}
}

// Behind a trusted proxy, clients are told apart by X-Forwarded-For; from
// anyone else the header is ignored, so it cannot be used to escape the
// limit.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.AuthFailuresPerMinute = 3
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		d.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	const proxy = "10.1.1.1"
	for i := range 3 {
		signIn(b.handler, "/graphql", proxy, fmt.Sprintf("Bearer guess-%d", i), "X-Forwarded-For", "198.51.100.66")
	}
	if rec := signIn(b.handler, "/graphql", proxy, "Bearer guess-x", "X-Forwarded-For", "198.51.100.66"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the guessing client behind the proxy: %d, want 429", rec.Code)
	}
	if rec := signIn(b.handler, "/graphql", proxy, "Bearer typo", "X-Forwarded-For", "198.51.100.1"); rec.Code != http.StatusUnauthorized {
		t.Errorf("its neighbour behind the same proxy: %d, want 401, not the guesser's 429", rec.Code)
	}
	if !strings.Contains(logs.String(), `"client":"198.51.100.66"`) {
		t.Errorf("the log does not name the client behind the proxy:\n%s", logs.String())
	}

	// From an untrusted peer, a new X-Forwarded-For per request changes
	// nothing: the peer is the client.
	for i := range 3 {
		signIn(b.handler, "/graphql", "203.0.113.9", "Bearer guess", "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i))
	}
	if rec := signIn(b.handler, "/graphql", "203.0.113.9", "Bearer guess", "X-Forwarded-For", "192.0.2.200"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer with a made-up X-Forwarded-For: %d, want 429", rec.Code)
	}
}

// Failed sign-ins and lockouts are logged with the client address, and
// every access line carries it; what was presented never is.
func TestSignInEventsAreLogged(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.AuthFailuresPerMinute = 2
		d.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	const secret = "Bearer s3cret-guess-value"
	for range 3 {
		signIn(b.handler, "/graphql", "203.0.113.7", secret)
	}
	signIn(b.handler, "/graphql", "203.0.113.8", "Bearer "+token)
	type line struct {
		Msg, Client, Scheme, Spent string
		Status                     int
	}
	var failed, lockouts, access int
	for _, raw := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		switch l.Msg {
		case "sign-in failed":
			failed++
			if l.Client != "203.0.113.7" || l.Scheme != "bearer" {
				t.Errorf("failure logged as %+v", l)
			}
		case "sign-in lockout":
			lockouts++
			if l.Client != "203.0.113.7" || l.Spent != "address+identity" { // one token guessed again and again
				t.Errorf("lockout logged as %+v", l)
			}
		case "request":
			access++
			if l.Client == "" {
				t.Errorf("an access line without the client: %s", raw)
			}
		}
	}
	if failed != 3 || lockouts != 1 || access != 4 {
		t.Errorf("%d failures, %d lockouts, %d access lines logged; want 3, 1, 4:\n%s", failed, lockouts, access, logs.String())
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Error("the log holds the presented token")
	}
}

// Two Authorization headers are refused whatever their order: servers and
// proxies disagree on which one counts.
func TestTwoAuthorizationHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	good := map[string]string{
		"/graphql":        "Bearer " + token,
		"/api/payments/x": "Bearer " + token,
		"/metrics":        "Basic " + basic("admin", adminPassword),
	}
	for path, right := range good {
		for _, order := range [][2]string{{right, "Bearer wrong"}, {"Bearer wrong", right}, {right, right}} {
			rec := signIn(b.handler, path, "203.0.113.7", "", "Authorization", order[0], "Authorization", order[1])
			if rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnauthorized {
				t.Errorf("%s with Authorization %q then %q: %d, want 400 or 401", path, order[0], order[1], rec.Code)
			}
		}
	}
}

// Not parallel: it swaps the default logger.
func TestSecretsAreNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	slog.SetDefault(logger)
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.Logger = logger })

	const wrongToken = "wrong-token-9f8e7d"
	const wrongPassword = "wrong-password-1a2b3c"
	for _, h := range []http.Header{
		{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}},
		{"Authorization": {"Bearer " + wrongToken}, "Content-Type": {"application/json"}},
		{"Authorization": {"Basic " + basic("admin", adminPassword)}},
		{"Authorization": {"Basic " + basic("admin", wrongPassword)}},
	} {
		b.raw(t, "POST", "/graphql", h, `{"query":"{ payments { edges { cursor } } }"}`)
		b.raw(t, "POST", "/api/payments", h, `{"clientId":"c","amount":"1","currency":"BRL","method":"PIX"}`)
		b.raw(t, "GET", "/admin", h, "")
		b.raw(t, "GET", "/metrics", h, "")
	}
	// Staff passwords, through the sign-in form and the account page.
	for _, password := range []string{adminPassword, wrongPassword} {
		b.newClient(t).post(t, "/admin/login", url.Values{"username": {"admin"}, "password": {password}})
	}
	const newPassword = "a-brand-new-password-7d6c"
	b.asAdmin(t).post(t, "/admin/account", url.Values{"current_password": {adminPassword}, "new_password": {newPassword}, "confirm_password": {newPassword}})
	_, added := b.signIn(t, "admin", newPassword).post(t, "/admin/staff", url.Values{"username": {"newcomer"}, "role": {"viewer"}})
	temporary := added.Find("code.password").Text()
	if temporary == "" {
		t.Fatal("no temporary password shown")
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged; the test proves nothing")
	}
	for _, secret := range []string{token, wrongToken, adminPassword, wrongPassword, basic("admin", adminPassword), newPassword, temporary} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log contains the secret %q", secret)
		}
	}
}

// A request without credentials is answered 401 before its body is read: a
// stranger's endless chunked body costs nothing.
func TestUnauthenticatedBodiesAreNotRead(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, path := range []string{"/graphql", "/api/payments"} {
		t.Run(path, func(t *testing.T) {
			body, sender := io.Pipe()
			go sender.Write([]byte(`{"query": "`)) // and never the rest
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// The client waits for its body to be written before it gives
			// up: end the body when the test does.
			context.AfterFunc(ctx, func() { sender.Close() })
			req, _ := http.NewRequestWithContext(ctx, "POST", b.srv.URL+path, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer wrong")
			res, err := b.srv.Client().Do(req)
			if err != nil {
				t.Fatalf("no answer while the body was still coming: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || req.ContentLength > 0 {
				t.Errorf("status %d (body length %d), want 401 for a chunked body", res.StatusCode, req.ContentLength)
			}
		})
	}
}

// HSTS is sent to clients that came over HTTPS: this server's own TLS, or a
// trusted proxy's X-Forwarded-Proto. Over plain HTTP it would mean nothing.
func TestHSTS(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	tests := []struct {
		name, peer, proto string
		tls, want         bool
	}{
		{"plain HTTP", "203.0.113.7:1", "", false, false},
		{"TLS", "203.0.113.7:1", "", true, true},
		{"a trusted proxy's https", "10.0.0.1:1", "https", false, true},
		{"a trusted proxy's http", "10.0.0.1:1", "http", false, false},
		{"anyone else's https", "203.0.113.7:1", "https", false, false},
	}
	for _, tt := range tests {
		for _, path := range []string{"/healthz", "/graphql", "/admin"} {
			req := httptest.NewRequest("GET", path, nil)
			req.RemoteAddr = tt.peer
			if tt.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tt.proto)
			}
			if tt.tls {
				req.TLS = &tls.ConnectionState{}
			}
			rec := httptest.NewRecorder()
			b.handler.ServeHTTP(rec, req)
			got := rec.Header().Get("Strict-Transport-Security")
			if (got != "") != tt.want || tt.want && !strings.HasPrefix(got, "max-age=") {
				t.Errorf("%s, %s: Strict-Transport-Security %q, want it %v", tt.name, path, got, tt.want)
			}
		}
	}
}

// The profiler and expvar are not on the public listener, whatever the
// credentials; they are served on DEBUG_ADDR only (internal/app/http.go).
func TestDebugEndpointsAreNotPublic(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/vars"} {
		for name, h := range map[string]http.Header{
			"admin": {"Authorization": {"Basic " + basic("admin", adminPassword)}},
			"token": {"Authorization": {"Bearer " + token}},
		} {
			if res, body := b.raw(t, "GET", path, h, ""); res.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s as %s: %d %.100s, want 404", path, name, res.StatusCode, body)
			}
		}
	}
	debug := httptest.NewServer(httpapi.DebugHandler())
	defer debug.Close()
	for _, path := range []string{"/debug/pprof/", "/debug/vars"} {
		res, err := http.Get(debug.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("the debug handler's %s: %d", path, res.StatusCode)
		}
	}
}

// TestAccessLine: each request gets one access line with what an operator
// needs to find it, its time within the request, and no source location.
func TestAccessLine(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{AddSource: true}))
	})
	before := time.Now()
	res, raw := b.raw(t, "POST", "/graphql", http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}},
		`{"query":"{ payments { edges { cursor } } }"}`)
	after := time.Now()
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, `"msg":"request"`) {
			if line != nil {
				t.Fatalf("two access lines for one request:\n%s", logs.String())
			}
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("access line %q: %v", l, err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no access line:\n%s", logs.String())
	}
	want := map[string]any{"level": "INFO", "request_id": res.Header.Get("X-Request-Id"), "method": "POST", "path": "/graphql",
		"status": float64(200), "bytes": float64(len(raw))}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access line %s = %v, want %v", k, line[k], v)
		}
	}
	if line["client"] == "" || line["client"] == nil {
		t.Errorf("access line without the client: %v", line)
	}
	took, ok := line["duration_ms"].(float64)
	if !ok || took < 0 || took > float64(after.Sub(before).Milliseconds()+1) {
		t.Errorf("access line duration_ms = %v", line["duration_ms"])
	}
	// The line's time is within the request, at least its duration after
	// the test sent it. (That a time at the request's start would pass too
	// when connecting took longer than serving is why this is loose.)
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(line["time"]))
	if err != nil || at.After(after) || at.Sub(before) < time.Duration(took*float64(time.Millisecond)) {
		t.Errorf("access line time %v (%v), want at least %v ms after %v and at most %v", line["time"], err, took, before, after)
	}
	if _, ok := line["source"]; ok {
		t.Errorf("access line with a source: %v", line)
	}
}
