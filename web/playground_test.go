package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The embedded Playground files are exactly those scripts/build-playground.sh
// built: every file of static/playground is listed in SHA256SUMS (nothing
// unbuilt slipped in, nothing built is missing) with its checksum.
func TestPlaygroundAssetsMatchTheirChecksums(t *testing.T) {
	t.Parallel()
	sums, err := static.Open("static/playground/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	var listed []string
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		want, name, _ := strings.Cut(line, "  ")
		listed = append(listed, name)
		data, err := fs.ReadFile(static, "static/playground/"+name)
		if err != nil {
			t.Errorf("%s is listed but not embedded: %v", name, err)
			continue
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: sha256 %x, want %s; run scripts/build-playground.sh", name, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(static, "static/playground")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			embedded = append(embedded, e.Name())
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, embedded) {
		t.Errorf("SHA256SUMS lists %q, static/playground holds %q; run scripts/build-playground.sh", listed, embedded)
	}
	// The bundle, its styles, Monaco's workers and the licences.
	for _, name := range []string{"playground.js", "playground.css", "editor.worker.js", "json.worker.js", "graphql.worker.js", "LICENSES.txt"} {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is not part of the build", name)
		}
	}
}

// LICENSES.txt carries the licence of the main packages bundled into the
// Playground (build.mjs adds every package that has code in it).
func TestPlaygroundLicences(t *testing.T) {
	t.Parallel()
	data, err := fs.ReadFile(static, "static/playground/LICENSES.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, pkg := range []string{"graphiql@5.", "@graphiql/react@", "react@19.", "react-dom@19.", "graphql@", "graphql-ws@", "monaco-editor@", "monaco-graphql@"} {
		if !strings.Contains(text, "\n"+pkg) {
			t.Errorf("LICENSES.txt has no section for %s", pkg)
		}
	}
	if !strings.Contains(text, "Permission is hereby granted, free of charge") {
		t.Error("LICENSES.txt holds no MIT licence text")
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

// cspDirectives splits a Content-Security-Policy into its directives.
func cspDirectives(csp string) map[string]string {
	m := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		m[name] = value
	}
	return m
}

func TestPlaygroundPage(t *testing.T) {
	t.Parallel()
	rec, doc := renderPlayground(t)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	csp := rec.Header().Get("Content-Security-Policy")
	d := cspDirectives(csp)
	// Scripts and workers from this server only, never inline or eval'd;
	// styles may be inline (Monaco's, see playgroundCSP) but come from no
	// other host; nothing is fetched from or sent to another host.
	for name, want := range map[string]string{
		"default-src":     "'none'",
		"script-src":      "'self'",
		"worker-src":      "'self'",
		"style-src":       "'self' 'unsafe-inline'",
		"connect-src":     "'self'",
		"img-src":         "'self' data:",
		"font-src":        "'self' data:",
		"frame-ancestors": "'none'",
	} {
		if d[name] != want {
			t.Errorf("CSP %s is %q, want %q (in %q)", name, d[name], want, csp)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "blob:") {
		t.Errorf("CSP %q allows eval or blob: URLs", csp)
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", rec.Header())
	}
	if doc.Find("script:not([src])").Length() != 0 {
		t.Error("the page has an inline script")
	}
	// Every script and stylesheet is one of ours, and embedded.
	refs := 0
	doc.Find("script[src], link[rel=stylesheet]").Each(func(_ int, s *goquery.Selection) {
		refs++
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
	if refs != 2 {
		t.Errorf("%d scripts and stylesheets, want the bundle's playground.js and playground.css", refs)
	}

	key := doc.Find("#graphiql").AttrOr("data-idempotency-key", "")
	_, again := renderPlayground(t)
	if key == "" || key == again.Find("#graphiql").AttrOr("data-idempotency-key", "") {
		t.Errorf("idempotency key %q is not fresh on every load", key)
	}
}

func TestPlaygroundAssetsServed(t *testing.T) {
	t.Parallel()
	// Under nosniff a browser runs a script or applies a stylesheet only
	// when its Content-Type says so; other types are not checked.
	for name, contentType := range map[string]string{
		"playground.js":     "text/javascript; charset=utf-8",
		"playground.css":    "text/css; charset=utf-8",
		"editor.worker.js":  "text/javascript; charset=utf-8",
		"json.worker.js":    "text/javascript; charset=utf-8",
		"graphql.worker.js": "text/javascript; charset=utf-8",
		"codicon.ttf":       "",
		"LICENSES.txt":      "",
	} {
		rec := httptest.NewRecorder()
		PlaygroundAssets().ServeHTTP(rec, httptest.NewRequest("GET", playgroundPrefix+name, nil))
		h := rec.Header()
		// Workers run under the CSP of their own response: it must be ours.
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 || h.Get("X-Content-Type-Options") != "nosniff" ||
			contentType != "" && h.Get("Content-Type") != contentType || h.Get("Content-Security-Policy") != playgroundCSP {
			t.Errorf("%s: status %d, %d bytes, headers %v", name, rec.Code, rec.Body.Len(), h)
		}
	}
}
