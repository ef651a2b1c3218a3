package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The embedded GraphiQL and React files are exactly those
// scripts/build-playground.sh built from the pinned npm packages.
func TestPlaygroundAssetsMatchTheirChecksums(t *testing.T) {
	t.Parallel()
	sums, err := static.Open("static/playground/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	checked := 0
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		want, name, _ := strings.Cut(line, "  ")
		data, err := fs.ReadFile(static, "static/playground/"+name)
		if err != nil {
			t.Errorf("%s is listed but not embedded: %v", name, err)
			continue
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: sha256 %x, want %s; run scripts/build-playground.sh", name, got, want)
		}
		checked++
	}
	if checked < 7 {
		t.Errorf("checked %d files, want the 7 GraphiQL, React and licence files", checked)
	}
}

func renderPlayground(t *testing.T) (*httptest.ResponseRecorder, *goquery.Document) {
	t.Helper()
	rec := httptest.NewRecorder()
	Playground().ServeHTTP(rec, httptest.NewRequest("GET", "/playground", nil))
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rec, doc
}

func TestPlaygroundPage(t *testing.T) {
	t.Parallel()
	rec, doc := renderPlayground(t)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self';", "style-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", rec.Header())
	}
	if doc.Find("script:not([src])").Length() != 0 {
		t.Error("the page has an inline script")
	}
	// Every script and stylesheet is one of ours, and embedded.
	doc.Find("script[src], link[rel=stylesheet]").Each(func(_ int, s *goquery.Selection) {
		ref := s.AttrOr("src", s.AttrOr("href", ""))
		name, ok := strings.CutPrefix(ref, playgroundPrefix)
		if !ok {
			t.Errorf("%s is not served from %s", ref, playgroundPrefix)
			return
		}
		if _, err := fs.Stat(static, "static/playground/"+name); err != nil {
			t.Errorf("%s is not embedded: %v", ref, err)
		}
	})

	key := doc.Find("#graphiql").AttrOr("data-idempotency-key", "")
	_, again := renderPlayground(t)
	if key == "" || key == again.Find("#graphiql").AttrOr("data-idempotency-key", "") {
		t.Errorf("idempotency key %q is not fresh on every load", key)
	}
}

func TestPlaygroundAssetsServed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"graphiql.min.js", "graphiql.min.css", "playground.js", "LICENSE.graphiql"} {
		rec := httptest.NewRecorder()
		PlaygroundAssets().ServeHTTP(rec, httptest.NewRequest("GET", playgroundPrefix+name, nil))
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: status %d, %d bytes, headers %v", name, rec.Code, rec.Body.Len(), rec.Header())
		}
	}
}
