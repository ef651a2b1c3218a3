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

// localStorageWithJS lists the localStorage keys whose value holds a text.
const localStorageWithJS = `(text) => Object.keys(localStorage).filter(k => (localStorage.getItem(k) || "").includes(text)).join(",")`

// TestPlaygroundTokenStaysInTheTab pastes a token into the Playground's
// Headers tab and runs an example: the token is kept in the tab's
// sessionStorage (a reload keeps it), and nowhere in localStorage, which
// every later visit and every page of the origin (the admin's) can read,
// with no expiry; the History pane keeps the operation, not the token. A
// new tab starts without it, and a token an earlier version left in
// localStorage is removed on load.
func TestPlaygroundTokenStaysInTheTab(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)
	b := setup(t, dbtest.SQLite(t))
	headersEditor := editorJS + `; (editor(v => v.includes("Authorization")) || {getValue: () => ""}).getValue()`
	const oldToken = "token-an-earlier-version-kept"

	// What an earlier Playground left on this origin: the Headers tab, and
	// a history entry with its headers.
	if err := chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/api/openapi.json")); err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf(`{"Authorization": "Bearer %s"}`, oldToken)
	seed := fmt.Sprintf(`localStorage.setItem("graphiql:headers", %q); localStorage.setItem("graphiql:queries", JSON.stringify({queries: [{query: "{ payments(first: 1) { edges { node { id } } } }", headers: %q}]})); "ok"`, old, old)
	if got := evalString(t, ctx, seed); got != "ok" {
		t.Fatalf("seed localStorage: %s", got)
	}

	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground: %v", err)
	}
	if got := poll(t, ctx, 20*time.Second, headersEditor); !strings.Contains(got, "<paste the API token") {
		t.Errorf("the Headers tab starts with %q, want the placeholder", got)
	}
	if keys := evalString(t, ctx, `(`+localStorageWithJS+`)(`+fmt.Sprintf("%q", oldToken)+`)`); keys != "" {
		t.Errorf("after loading, localStorage still holds the token an earlier version kept, in %s", keys)
	}

	// Paste a token and run the first example: GraphiQL saves the Headers
	// tab and adds the run to its history.
	setHeaders := fmt.Sprintf(editorJS+`; editor(v => v.includes("Authorization")).setValue(%q); "ok"`, `{"Authorization": "Bearer `+token+`"}`)
	if got := evalString(t, ctx, setHeaders); got != "ok" {
		t.Fatalf("set the Authorization header: %s", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, 20*time.Second, editorJS+`; editor(v => v.includes('"data"') && v.includes('"replayed": false')) ? "ran" : ""`)
	poll(t, ctx, 10*time.Second, `(sessionStorage.getItem("graphiql:headers") || "").includes("`+token+`") ? "saved" : ""`)
	poll(t, ctx, 10*time.Second, `(localStorage.getItem("graphiql:queries") || "").includes("CreatePayment") ? "saved" : ""`)
	if keys := evalString(t, ctx, `(`+localStorageWithJS+`)("`+token+`")`); keys != "" {
		t.Errorf("localStorage holds the pasted token, in %s", keys)
	}

	// The tab keeps it over a reload; a new tab has none.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, ctx, 20*time.Second, headersEditor); !strings.Contains(got, token) {
		t.Errorf("after a reload the Headers tab holds %q, want the token", got)
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tab,
		chromedp.Navigate(b.srv.URL+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground in a new tab: %v", err)
	}
	if got := poll(t, tab, 20*time.Second, headersEditor); strings.Contains(got, token) || !strings.Contains(got, "<paste the API token") {
		t.Errorf("a new tab's Headers tab holds %q, want the placeholder", got)
	}
	browsertest.Screenshot(t, tab, "playground-new-tab")
}
