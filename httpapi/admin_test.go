package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// staffClient is a browser without JavaScript: it keeps cookies and does
// not follow redirects, so tests see each 303.
type staffClient struct {
	b   *bundle
	jar http.CookieJar
	c   *http.Client
}

func (b *bundle) newClient(t testing.TB) *staffClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &staffClient{b: b, jar: jar, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn signs in through the form and returns the signed-in client.
func (b *bundle) signIn(t testing.TB, username, password string) *staffClient {
	t.Helper()
	c := b.newClient(t)
	res, _ := c.post(t, "/admin/login", url.Values{"username": {username}, "password": {password}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in as %s: %d, want 303", username, res.StatusCode)
	}
	return c
}

// asAdmin is the bootstrap admin, signed in once per bundle.
func (b *bundle) asAdmin(t testing.TB) *staffClient {
	t.Helper()
	b.adminOnce.Do(func() { b.admin = b.signIn(t, "admin", adminPassword) })
	return b.admin
}

// addStaff adds an account with a chosen password (not to be changed) and
// signs it in.
func (b *bundle) addStaff(t testing.TB, username string, role staff.Role) *staffClient {
	t.Helper()
	if _, err := b.staff.Add(context.Background(), staff.CommandLine, username, role, username+"-password"); err != nil {
		t.Fatal(err)
	}
	return b.signIn(t, username, username+"-password")
}

// do sends a request with the client's cookies and returns the response
// with its body read.
func (c *staffClient) do(t testing.TB, method, path string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}

func parse(t testing.TB, body []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// get loads a page.
func (c *staffClient) get(t testing.TB, path string) (*http.Response, *goquery.Document) {
	t.Helper()
	res, body := c.do(t, "GET", path, nil, "")
	return res, parse(t, body)
}

// post submits a form as a browser on this site does.
func (c *staffClient) post(t testing.TB, path string, form url.Values) (*http.Response, *goquery.Document) {
	t.Helper()
	res, body := c.do(t, "POST", path, http.Header{
		"Content-Type":   {"application/x-www-form-urlencoded"},
		"Origin":         {c.b.srv.URL},
		"Sec-Fetch-Site": {"same-origin"},
	}, form.Encode())
	return res, parse(t, body)
}

// adminPage gets an admin page as the admin, without following redirects.
func (b *bundle) adminPage(t *testing.T, path string) (*http.Response, *goquery.Document) {
	t.Helper()
	return b.asAdmin(t).get(t, path)
}

func rowKeys(doc *goquery.Document) string {
	return strings.Join(doc.Find("table.payments tbody tr a.key").Map(func(_ int, s *goquery.Selection) string {
		return s.Find("code").Text()
	}), ",")
}

// adminPaths are the admin's pages and forms, every one behind the sign-in.
var adminPaths = []struct{ method, path string }{
	{"GET", "/admin"}, {"GET", "/admin?flagged=1"}, {"GET", "/admin/payments/pay_x"}, {"GET", "/admin/payments.csv"},
	{"POST", "/admin/payments/pay_x/capture"}, {"POST", "/admin/payments/pay_x/cancel"}, {"POST", "/admin/payments/pay_x/refund"},
	{"GET", "/admin/staff"}, {"POST", "/admin/staff"}, {"POST", "/admin/staff/admin/role"}, {"POST", "/admin/staff/admin/disable"},
	{"GET", "/admin/audit"}, {"GET", "/admin/account"}, {"POST", "/admin/account"}, {"POST", "/admin/logout"},
	{"GET", "/admin/nothing-here"}, {"PUT", "/admin"}, {"DELETE", "/admin/payments/pay_x"},
}

// TestAdminSignIn is the admin's sign-in: every page wants a session, the
// form and its answers, the session cookie, where the browser is sent
// next, and sign-out.
func TestAdminSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	t.Run("every admin page wants a session", func(t *testing.T) { adminPagesWantASession(t, b) })
	t.Run("sign in and out through the form", func(t *testing.T) {
		c := b.newClient(t)
		signInForm(t, c)
		cookie := signInThroughTheForm(t, b, c)
		// Sign-out ends the session on the server: a copy of the old
		// cookie is worth nothing.
		res, _ := c.post(t, "/admin/logout", nil)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/login" {
			t.Errorf("sign out: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		replay := b.newClient(t)
		res, _ = replay.do(t, "GET", "/admin", http.Header{"Cookie": {"cmpay_admin=" + cookie.Value}}, "")
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("the old cookie after sign-out: %d, want 303 to the sign-in", res.StatusCode)
		}
	})
	t.Run("next stays on this site", func(t *testing.T) { signInNextStaysHere(t, b) })
	t.Run("over HTTPS the cookie is Secure", func(t *testing.T) {
		req := httptest.NewRequest("POST", "https://cmpay.example/admin/login", strings.NewReader(url.Values{"username": {"admin"}, "password": {adminPassword}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		if cs := rec.Result().Cookies(); rec.Code != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
			t.Errorf("over HTTPS: %d, cookies %v", rec.Code, cs)
		}
	})
}

// adminPagesWantASession: without a session every admin page sends the
// browser to the sign-in, coming back after; HTTP Basic is not accepted
// any more.
func adminPagesWantASession(t *testing.T, b *bundle) {
	for _, p := range adminPaths {
		for name, header := range map[string]http.Header{
			"nothing":           nil,
			"HTTP Basic":        {"Authorization": {"Basic " + basic("admin", adminPassword)}},
			"a token":           {"Authorization": {"Bearer " + token}},
			"a made-up session": {"Cookie": {"cmpay_admin=made-up"}},
		} {
			res, _ := b.newClient(t).do(t, p.method, p.path, header, "")
			loc := res.Header.Get("Location")
			if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin/login") {
				t.Errorf("%s %s with %s: %d to %q; want 303 to /admin/login", p.method, p.path, name, res.StatusCode, loc)
			}
			if p.method == "GET" && p.path == "/admin/payments/pay_x" && loc != "/admin/login?next=%2Fadmin%2Fpayments%2Fpay_x" {
				t.Errorf("the sign-in does not come back: %q", loc)
			}
		}
	}
}

// signInForm checks the form, its open stylesheet, and its answer to wrong
// credentials: the same words whichever was wrong, the username kept.
func signInForm(t *testing.T, c *staffClient) {
	res, doc := c.get(t, "/admin/login")
	if res.StatusCode != http.StatusOK || doc.Find(`form[method=post][action="/admin/login"] input[name=username]`).Length() != 1 ||
		doc.Find(`input[name=password][type=password]`).Length() != 1 || doc.Find("nav").Length() != 0 {
		t.Fatalf("sign-in form: %d", res.StatusCode)
	}
	// Its stylesheet is open: it holds no data.
	if res, css := c.do(t, "GET", "/admin/static/admin.css", nil, ""); res.StatusCode != http.StatusOK || len(css) < 1000 {
		t.Errorf("stylesheet: %d", res.StatusCode)
	}
	var errors []string
	for _, creds := range [][2]string{{"admin", "wrong"}, {"nobody", adminPassword}, {"", ""}} {
		res, doc := c.post(t, "/admin/login", url.Values{"username": {creds[0]}, "password": {creds[1]}})
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("Set-Cookie") != "" {
			t.Errorf("%v: %d, cookie %q", creds, res.StatusCode, res.Header.Get("Set-Cookie"))
		}
		if v, _ := doc.Find("input[name=username]").Attr("value"); v != creds[0] {
			t.Errorf("username not kept: %q", v)
		}
		errors = append(errors, doc.Find("[role=alert]").Text())
	}
	if errors[0] != "Wrong username or password." || errors[1] != errors[0] || errors[2] != errors[0] {
		t.Errorf("errors %q: want one message that does not say which was wrong", errors)
	}
}

// signInThroughTheForm signs c in with the right credentials and checks
// the session cookie (only its hash stored), the admin's security headers
// and the sign-in page sending a signed-in browser on. It returns the
// cookie.
func signInThroughTheForm(t *testing.T, b *bundle, c *staffClient) *http.Cookie {
	res, _ := c.post(t, "/admin/login", url.Values{"username": {"ADMIN"}, "password": {adminPassword}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin" {
		t.Fatalf("sign in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	cookie := res.Cookies()[0]
	if len(res.Cookies()) != 1 || cookie.Name != "cmpay_admin" || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode ||
		cookie.Path != "/admin" || cookie.Secure || len(cookie.Value) < 43 {
		t.Errorf("cookie %+v: want one HttpOnly, SameSite=Lax cookie for /admin of at least 256 bits, not Secure over plain HTTP", cookie)
	}
	// The table holds only the token's hash.
	var stored []string
	b.db.Gorm.Table("staff_sessions").Pluck("id", &stored)
	for _, id := range stored {
		if strings.Contains(id, cookie.Value) {
			t.Error("the session table holds the token itself")
		}
	}
	res, doc := c.get(t, "/admin")
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find(".who").Text(), "admin") {
		t.Fatalf("signed in: %d", res.StatusCode)
	}
	h := res.Header
	csp := h.Get("Content-Security-Policy")
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") && !strings.Contains(csp, "script-src 'none'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", h)
	}
	// Signed in, the sign-in page sends the browser on.
	if res, _ := c.get(t, "/admin/login?next=/admin/audit"); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/audit" {
		t.Errorf("sign-in page when signed in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	return cookie
}

// signInNextStaysHere: next, after signing in, leads to paths on this site
// only.
func signInNextStaysHere(t *testing.T, b *bundle) {
	for next, want := range map[string]string{
		"/admin/payments/pay_1?x=1":  "/admin/payments/pay_1?x=1",
		"/admin/audit":               "/admin/audit",
		"//evil.example/admin":       "/admin",
		"https://evil.example/admin": "/admin",
		"/\\evil.example":            "/admin",
		"/admin/../graphql":          "/admin",
		"/playground":                "/playground",
		"/admin/./logout":            "/admin",
		"/admin/logout":              "/admin",
		"/admin/login?next=/x":       "/admin",
		"javascript:alert(1)":        "/admin",
		"/admin/":                    "/admin/",
		"/admin//evil.example":       "/admin",
		"/admin/.":                   "/admin",
		"/admin/logout/":             "/admin",
		// Decoded, these start "//" or hold a backslash: what
		// RequestURI would re-escape into a link to another host.
		"/%2Fevil.example/%C3%A9":               "/admin",
		"/%2Fevil.example/a b":                  "/admin",
		"/%2Fuser@evil.example:443/x{":          "/admin",
		"/%5Cevil.example":                      "/admin",
		"/admin/payments/pay_%C3%A9":            "/admin/payments/pay_%C3%A9",
		"/admin?q=" + strings.Repeat("x", 3000): "/admin",
	} {
		res, _ := b.newClient(t).post(t, "/admin/login", url.Values{"username": {"admin"}, "password": {adminPassword}, "next": {next}})
		if got := res.Header.Get("Location"); got != want {
			t.Errorf("next %q: to %q, want %q", next, got, want)
		}
	}
}

func TestAdminFilters(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		plain := b.create(t, "plain", input("acme", "1", "BRL", "PIX")).Payment
		b.create(t, "replayed", input("acme", "2", "BRL", "PIX"))
		b.create(t, "replayed", input("acme", "2", "BRL", "PIX"))
		b.create(t, "rejected", input("globex", "3", "USD", "PIX"))
		b.gql(t, createMutation, map[string]any{"key": "rejected", "input": input("globex", "4", "USD", "PIX")})
		today := time.Now().UTC().Format(time.DateOnly)
		tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)

		for _, tt := range []struct{ query, want string }{
			{"", "rejected,replayed,plain"},
			{"?flagged=1", "rejected,replayed"},
			{"?replayed=1", "replayed"},
			{"?rejected=1", "rejected"},
			{"?client=acme", "replayed,plain"},
			{"?client=acme&flagged=1", "replayed"},
			{"?key=plain", "plain"},
			{"?q=globex", "rejected"},
			{"?q=replayed", "replayed"},
			{"?from=" + today + "&to=" + today, "rejected,replayed,plain"},
			{"?from=" + tomorrow, ""},
			{"?flagged=on", "rejected,replayed"},
		} {
			res, doc := b.adminPage(t, "/admin"+tt.query)
			if res.StatusCode != http.StatusOK || rowKeys(doc) != tt.want {
				t.Errorf("/admin%s: %d, rows %q, want %q", tt.query, res.StatusCode, rowKeys(doc), tt.want)
			}
		}

		res, doc := b.adminPage(t, "/admin?from=yesterday")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(doc.Find("[role=alert]").Text(), "from must be a date") {
			t.Errorf("bad date: %d %q", res.StatusCode, doc.Find("[role=alert]").Text())
		}
		res, doc = b.adminPage(t, "/admin?from="+tomorrow+"&to="+today)
		if res.StatusCode != http.StatusBadRequest || doc.Find("[role=alert]").Length() != 1 {
			t.Errorf("backwards range: %d", res.StatusCode)
		}
		res, _ = b.adminPage(t, "/admin?after=garbage")
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("bad cursor: %d", res.StatusCode)
		}

		res, _ = b.adminPage(t, "/admin?q="+plain.ID)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/payments/"+plain.ID {
			t.Errorf("search by payment id: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		res, doc = b.adminPage(t, "/admin/payments/"+plain.ID)
		if res.StatusCode != http.StatusOK || doc.Find(".full-key").Text() != "plain" {
			t.Errorf("payment page: %d", res.StatusCode)
		}
		res, doc = b.adminPage(t, "/admin/payments/pay_missing")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(doc.Find("h1").Text(), "No such payment") {
			t.Errorf("unknown payment: %d %q", res.StatusCode, doc.Find("h1").Text())
		}
	})
}

func TestAdminPagination(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		const n = 57
		for i := range n {
			b.create(t, fmt.Sprintf("k%03d", i), input("c", "1", "BRL", "PIX"))
		}
		seen := map[string]bool{}
		path, pages := "/admin", 0
		for path != "" {
			res, doc := b.adminPage(t, path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", path, res.StatusCode)
			}
			pages++
			doc.Find("table.payments tbody tr a.key").Each(func(_ int, s *goquery.Selection) {
				key := s.Find("code").Text()
				if seen[key] {
					t.Errorf("%s shown twice", key)
				}
				seen[key] = true
			})
			// Payments created between pages do not shift the next one.
			b.create(t, fmt.Sprintf("new%d", pages), input("c", "1", "BRL", "PIX"))
			path = doc.Find("a[rel=next]").AttrOr("href", "")
			if pages > 5 {
				t.Fatal("too many pages")
			}
		}
		if pages != 2 || len(seen) != n {
			t.Errorf("%d pages, %d payments seen; want 2 and %d", pages, len(seen), n)
		}
	})
}

// A path the admin does not have gets the admin's own page, as HTML with
// its security headers, not text/plain; before signing in, the sign-in.
func TestAdminNotFoundPage(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	admin := b.asAdmin(t)
	for _, path := range []string{"/admin/nope", "/admin/payments", "/admin/payments/x/y"} {
		res, doc := admin.get(t, path)
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(doc.Text(), "CMPay admin") || res.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %d %v", path, res.StatusCode, res.Header)
		}
	}
}
