package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/internal/dbtest"
)

func adminHeader() http.Header {
	return http.Header{"Authorization": {"Basic " + basic("admin", adminPassword)}}
}

// adminPage gets an admin page as the admin, without following redirects.
func (b *bundle) adminPage(t *testing.T, path string) (*http.Response, *goquery.Document) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.srv.URL+path, nil)
	req.Header = adminHeader()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, doc
}

func rowKeys(doc *goquery.Document) string {
	return strings.Join(doc.Find("table.payments tbody tr a.key").Map(func(_ int, s *goquery.Selection) string {
		return s.Find("code").Text()
	}), ",")
}

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, path := range []string{"/admin", "/admin/payments/pay_x", "/admin/static/admin.css", "/admin?flagged=1"} {
		for name, header := range map[string]http.Header{
			"no credentials": nil,
			"wrong password": {"Authorization": {"Basic " + basic("admin", "wrong")}},
			"wrong user":     {"Authorization": {"Basic " + basic("root", adminPassword)}},
			"a bearer token": {"Authorization": {"Bearer " + token}},
		} {
			res, _ := b.raw(t, "GET", path, header, "")
			if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s with %s: %d, WWW-Authenticate %q; want 401 asking for Basic", path, name, res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		}
	}
	res, _ := b.raw(t, "GET", "/admin", adminHeader(), "")
	if res.StatusCode != http.StatusOK {
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
	res, css := b.raw(t, "GET", "/admin/static/admin.css", adminHeader(), "")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") || len(css) < 1000 {
		t.Errorf("stylesheet: %d %s, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(css))
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
