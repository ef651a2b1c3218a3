package httpapi_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// open lists what answers without credentials: the health check and the
// Playground page with its assets (its requests to /graphql need a token).
var open = map[string]bool{
	"GET /healthz":             true,
	"GET /playground":          true,
	"GET /playground/assets/*": true,
}

// TestEveryRouteNeedsCredentials walks every route the router knows and
// calls it with no credentials and with wrong ones: all but the open ones
// must answer 401 and run nothing; the admin UI, whose staff sign in with a
// form, sends the browser to it (303 to /admin/login) instead.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 1_000_000 })
	routes, ok := b.handler.(chi.Routes)
	if !ok {
		t.Fatalf("the handler is a %T, not a router that can be walked", b.handler)
	}
	walked := 0
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked++
		path := strings.NewReplacer("{id}", "pay_x", "/playground/assets/*", "/playground/assets/playground.js", "/*", "/x").Replace(route)
		methods := []string{method}
		if method == "*" {
			methods = []string{"GET", "POST", "PUT", "DELETE"}
		}
		for _, m := range methods {
			for name, header := range map[string]http.Header{
				"no credentials":   {},
				"a wrong token":    {"Authorization": {"Bearer wrong"}},
				"a wrong password": {"Authorization": {"Basic " + basic("admin", "wrong")}},
			} {
				req := httptest.NewRequest(m, path, strings.NewReader(`{}`))
				req.Header = header.Clone()
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				b.handler.ServeHTTP(rec, req)
				if open[m+" "+route] {
					if rec.Code != http.StatusOK {
						t.Errorf("%s %s is meant to be open, got %d", m, path, rec.Code)
					}
					continue
				}
				if strings.HasPrefix(route, "/admin") {
					if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/login") {
						t.Errorf("%s %s with %s: %d to %q, want 303 to the sign-in", m, path, name, rec.Code, loc)
					}
					continue
				}
				if rec.Code != http.StatusUnauthorized {
					t.Errorf("%s %s with %s: %d, want 401", m, path, name, rec.Code)
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

func TestFailedSignInsAreLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 5 })
	call := func(addr, authorization string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
		req.RemoteAddr = addr + ":4242"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authorization)
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		return rec
	}
	for i := range 5 {
		if rec := call("203.0.113.7", "Bearer guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
		}
	}
	rec := call("203.0.113.7", "Bearer "+token)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "RATE_LIMITED") {
		t.Errorf("after 5 failures, even the right token: %d %v %s; want 429 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	// The admin's sign-in form shares the budget: the address is guessing,
	// so a wrong password gets 429; the right one still signs in.
	signIn := func(password string) *httptest.ResponseRecorder {
		form := url.Values{"username": {"admin"}, "password": {password}}
		req := httptest.NewRequest("POST", "/admin/login", strings.NewReader(form.Encode()))
		req.RemoteAddr = "203.0.113.7:4243"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		return rec
	}
	if adm := signIn("guess"); adm.Code != http.StatusTooManyRequests || adm.Header().Get("Retry-After") == "" {
		t.Errorf("a wrong admin password from a limited address: %d, want 429", adm.Code)
	}
	if adm := signIn(adminPassword); adm.Code != http.StatusSeeOther {
		t.Errorf("the right admin password from a limited address: %d, want 303 (never refused)", adm.Code)
	}
	// Other addresses and successful requests are not affected.
	if rec := call("198.51.100.1", "Bearer "+token); rec.Code != http.StatusOK {
		t.Errorf("another address: %d, want 200", rec.Code)
	}
	for range 20 {
		if rec := call("198.51.100.2", "Bearer "+token); rec.Code != http.StatusOK {
			t.Fatalf("successful requests must not be limited: %d", rec.Code)
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
	if logs.Len() == 0 {
		t.Fatal("nothing was logged; the test proves nothing")
	}
	for _, secret := range []string{token, wrongToken, adminPassword, wrongPassword, basic("admin", adminPassword), newPassword, temporary} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log contains the secret %q", secret)
		}
	}
}
