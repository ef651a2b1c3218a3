package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// editorJS finds GraphiQL's editor whose text matches a test. GraphiQL 5's
// editors are Monaco editors; the Playground's bundle sets Monaco's
// documented MonacoEnvironment.globalAPI option, which puts Monaco's API on
// window.monaco, so monaco.editor.getEditors() lists them (query, variables,
// headers, response) once Monaco has loaded.
const editorJS = `function editor(test) {
  return (window.monaco ? monaco.editor.getEditors() : []).find(e => test(e.getValue()));
}`

// graphqlErrorsJS lists the messages of the errors Monaco's GraphQL worker
// (monaco-graphql: owner "graphql") has marked in the operation editor.
const graphqlErrorsJS = `monaco.editor.getModelMarkers({owner: "graphql"})
  .filter(m => m.severity === monaco.MarkerSeverity.Error).map(m => m.message).join("\n")`

// exampleTabs are the Playground's example tabs, by title.
const exampleTabs = "CreatePayment,RetryPayment,Payments,Authorize,DeclinedPayment,SlowPayment,PixLater"

// tabsJS lists the titles of GraphiQL's tabs.
const tabsJS = `[...document.querySelectorAll(".graphiql-tab-button")].map(b => b.textContent.trim()).join(",")`

// TestPlaygroundInBrowser loads the Playground in headless Chromium, puts a
// token in the Headers tab, runs the ready createPayment example twice and
// sees the payment created, then replayed. With the token it loads the
// schema, and Monaco's GraphQL worker finds an error in a broken query and
// none in the examples. Every request the page makes must go to this
// server, Monaco's web workers included, with no CSP violation. The steps
// share one page and run in order.
func TestPlaygroundInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)
	b := setup(t, dbtest.SQLite(t))
	watch := browsertest.Watch(t, ctx)

	query := playgroundOpens(t, ctx, b.srv.URL)
	playgroundRunsTwice(t, ctx)
	playgroundValidates(t, ctx, query)

	var workers []string
	for _, r := range watch.Requests() {
		if strings.HasSuffix(r, ".worker.js") {
			workers = append(workers, strings.TrimPrefix(r, b.srv.URL))
		}
	}
	// Monaco starts a worker again when its settings change (a new schema,
	// a new JSON schema for the variables): each file counts once.
	slices.Sort(workers)
	workers = slices.Compact(workers)
	if want := []string{"/playground/assets/editor.worker.js", "/playground/assets/graphql.worker.js", "/playground/assets/json.worker.js"}; !slices.Equal(workers, want) {
		t.Errorf("Monaco's workers loaded from %q, want %q", workers, want)
	}
	var n int64
	b.db.Gorm.Table("payments").Where("client_id = ?", "playground").Count(&n)
	if n != 1 {
		t.Errorf("%d payments from the Playground, want 1", n)
	}
	if n := watch.Check(t, b.srv.URL); n < 5 {
		t.Errorf("only %d requests recorded; the page makes more", n)
	}
}

// playgroundOpens loads the Playground: its first tab is the createPayment
// example, its variables carry the page's fresh key, every example has its
// tab; then it puts a real token in the Headers tab. It returns the
// example's query.
func playgroundOpens(t *testing.T, ctx context.Context, base string) string {
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground: %v", err)
	}
	// GraphiQL loads Monaco after its first render: wait for the editors.
	query := poll(t, ctx, 20*time.Second, editorJS+`; (editor(v => v.includes("mutation CreatePayment")) || {getValue: () => ""}).getValue()`)
	key := evalString(t, ctx, `document.getElementById("graphiql").dataset.idempotencyKey`)
	if !strings.Contains(query, "createPayment(") || !strings.HasPrefix(key, "playground-") {
		t.Fatalf("the first tab is not the createPayment example with a fresh key (%q):\n%s", key, query)
	}
	variables := evalString(t, ctx, editorJS+`; (editor(v => v.includes('"idempotencyKey"')) || {getValue: () => ""}).getValue()`)
	if !strings.Contains(variables, `"idempotencyKey": "`+key+`"`) {
		t.Errorf("the first tab's variables do not carry the page's key %q:\n%s", key, variables)
	}
	if tabs := evalString(t, ctx, tabsJS); tabs != exampleTabs {
		t.Errorf("tabs %q, want the createPayment, retry, payments, lifecycle, decline, slow payment and Pix examples", tabs)
	}
	// The headers hint is there; replace it with a real token.
	setHeaders := fmt.Sprintf(editorJS+`; editor(v => v.includes("Authorization")).setValue(%q); "ok"`, `{"Authorization": "Bearer `+token+`"}`)
	if got := evalString(t, ctx, setHeaders); got != "ok" {
		t.Fatalf("set the Authorization header: %s", got)
	}
	return query
}

// playgroundRunsTwice runs the createPayment example twice: the payment is
// created, then replayed.
func playgroundRunsTwice(t *testing.T, ctx context.Context) {
	run := func(want string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
			t.Fatal(err)
		}
		return poll(t, ctx, 20*time.Second,
			editorJS+fmt.Sprintf(`; (editor(v => v.includes('"data"') && v.includes(%q)) || {getValue: () => ""}).getValue()`, want))
	}
	first := run(`"replayed": false`)
	second := run(`"replayed": true`)
	if !strings.Contains(first, `"amount": "49.90"`) || id(first) == "" || id(first) != id(second) ||
		!strings.Contains(second, `"outcome": "REPLAYED"`) {
		t.Errorf("first run:\n%s\nsecond run:\n%s", first, second)
	}
	browsertest.Screenshot(t, ctx, "playground")
}

// playgroundValidates: the schema loads with the token now in the Headers
// tab (the sidebar's re-fetch button), and the GraphQL worker validates
// against it: a field that does not exist is marked, then, with query put
// back, each example tab validates clean.
func playgroundValidates(t *testing.T, ctx context.Context, query string) {
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[aria-label^="Re-fetch GraphQL schema"]`))); err != nil {
		t.Fatal(err)
	}
	evalString(t, ctx, editorJS+`; editor(v => v.includes("mutation CreatePayment")).setValue(`+
		"`"+`mutation Broken { createPayment(input: {clientId: "c", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "k") { notAField } }`+"`"+`); ""`)
	poll(t, ctx, 20*time.Second, `(`+graphqlErrorsJS+`).includes('Cannot query field "notAField"') ? "marked" : ""`)
	evalString(t, ctx, editorJS+fmt.Sprintf(`; editor(v => v.includes("mutation Broken")).setValue(%q); ""`, query))
	// GraphiQL saves the editor into the tab a moment later, and names the
	// tab after the operation: wait for that before switching tabs.
	poll(t, ctx, 10*time.Second, `(`+tabsJS+`) === "`+exampleTabs+`" ? "saved" : ""`)
	// The lifecycle tab (authorize, capture, refund, cancel) is named after
	// its first operation, the slow payment's (create, then read) too.
	for i, tab := range strings.Split(exampleTabs, ",") {
		if i > 0 {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(".graphiql-tab:nth-of-type(%d) .graphiql-tab-button", i+1)))); err != nil {
				t.Fatal(err)
			}
		}
		poll(t, ctx, 20*time.Second, editorJS+fmt.Sprintf(`; editor(v => v.includes(" %s(")) && !(%s) ? "clean" : ""`, tab, graphqlErrorsJS))
	}
}

// poll evaluates js in the page until it returns a non-empty string, and
// returns that; it fails the test (with a screenshot, when
// CMPAY_SCREENSHOTS names a folder) after timeout.
func poll(t *testing.T, ctx context.Context, timeout time.Duration, js string) string {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out := evalString(t, ctx, js); out != "" {
			return out
		}
	}
	browsertest.Screenshot(t, ctx, "playground-failed")
	t.Fatalf("nothing within %s from %.200s", timeout, js)
	return ""
}

// evalString evaluates JavaScript in the page and returns its string value.
func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate %.80q: %v", js, err)
	}
	return v
}

// id is the payment id in a GraphiQL response.
func id(response string) string {
	_, rest, ok := strings.Cut(response, `"id": "`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
