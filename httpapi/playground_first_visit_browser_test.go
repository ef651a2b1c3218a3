package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// graphqlRequests counts the page's requests to /graphql so far.
func graphqlRequests(w *browsertest.Watcher) int {
	n := 0
	for _, r := range w.Requests() {
		if strings.HasSuffix(r, "/graphql") {
			n++
		}
	}
	return n
}

// TestPlaygroundFirstVisit is a newcomer's first minutes: the page loads
// and asks the server nothing (no 401 waiting in the response pane); with
// a token in the Headers tab it loads the schema; the Docs and History
// panes are styled as GraphiQL ships them (computed styles of the
// plugins' own rules, which an unstyled pane lacks); and after a reload the
// token is still there and the schema loads with it.
func TestPlaygroundFirstVisit(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)
	b := setup(t, dbtest.SQLite(t))
	watch := browsertest.Watch(t, ctx)
	headersEditor := editorJS + `; (editor(v => v.includes("Authorization")) || {getValue: () => ""}).getValue()`

	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground: %v", err)
	}
	// GraphiQL asks for the schema when it mounts, before Monaco loads:
	// by the time the editors are there, it would have.
	placeholder := poll(t, ctx, 20*time.Second, headersEditor)
	if !strings.Contains(placeholder, "<paste the API token") {
		t.Fatalf("the Headers tab starts with %q, want the placeholder", placeholder)
	}
	if n := graphqlRequests(watch); n != 0 {
		t.Errorf("%d requests to /graphql on load, before any token or click", n)
	}
	if got := evalString(t, ctx, editorJS+`; (editor(v => v.includes("401") || v.includes("UNAUTHENTICATED")) || {getValue: () => ""}).getValue()`); got != "" {
		t.Errorf("an editor shows an authentication error on load:\n%s", got)
	}
	browsertest.Screenshot(t, ctx, "playground-first-load")

	// The token goes in: the schema is fetched with it.
	setHeaders := fmt.Sprintf(editorJS+`; editor(v => v.includes("Authorization")).setValue(%q); "ok"`, `{"Authorization": "Bearer `+token+`"}`)
	if got := evalString(t, ctx, setHeaders); got != "ok" {
		t.Fatalf("set the Authorization header: %s", got)
	}
	openPane := func(label, sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.graphiql-sidebar button[aria-label="Show `+label+`"]`))); err != nil {
			t.Fatalf("open %s: %v", label, err)
		}
		poll(t, ctx, 20*time.Second, `document.querySelector(`+"`"+sel+"`"+`) ? "open" : ""`)
	}
	style := func(sel, property string) string {
		return evalString(t, ctx, `getComputedStyle(document.querySelector(`+"`"+sel+"`"+`)).`+property)
	}
	openPane("Documentation Explorer", ".graphiql-doc-explorer-root-type")
	if n := graphqlRequests(watch); n == 0 {
		t.Error("the schema was shown without a request to /graphql")
	}
	// Rules of @graphiql/plugin-doc-explorer's style.css: a section title
	// is a flex row, a type name link has the theme's colour, not a link's.
	if got := style(".graphiql-doc-explorer-section-title", "display"); got != "flex" {
		t.Errorf("Docs: a section title's display is %q, want flex (the plugin's styles are missing)", got)
	}
	if got := style("a.graphiql-doc-explorer-type-name", "textDecorationLine"); got != "none" {
		t.Errorf("Docs: a type name is underlined (%q): the plugin's styles are missing", got)
	}
	browsertest.Screenshot(t, ctx, "playground-docs")
	openPane("History", ".graphiql-history-header")
	if got := style(".graphiql-history-header", "display"); got != "flex" {
		t.Errorf("History: the header's display is %q, want flex (the plugin's styles are missing)", got)
	}
	browsertest.Screenshot(t, ctx, "playground-history")

	// GraphiQL saves the Headers tab (in the tab's sessionStorage) a moment
	// after an edit.
	poll(t, ctx, 10*time.Second, `(sessionStorage.getItem("graphiql:headers") || "").includes("`+token+`") ? "saved" : ""`)
	before := graphqlRequests(watch)
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, ctx, 20*time.Second, headersEditor); !strings.Contains(got, token) {
		t.Errorf("after a reload the Headers tab holds %q, want the token", got)
	}
	for deadline := time.Now().Add(10 * time.Second); graphqlRequests(watch) == before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("after a reload with a token kept, the schema was not fetched")
		}
	}
	watch.Check(t, b.srv.URL)
}
