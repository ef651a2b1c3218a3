package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// editorJS finds GraphiQL's CodeMirror editor whose text matches a test.
const editorJS = `function editor(test) {
  return [...document.querySelectorAll(".CodeMirror")].map(e => e.CodeMirror).find(cm => cm && test(cm.getValue()));
}`

// TestPlaygroundInBrowser loads the Playground in headless Chromium, puts a
// token in the Headers tab, runs the ready createPayment example twice and
// sees the payment created, then replayed. Every request the page makes
// must go to this server.
func TestPlaygroundInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)
	b := setup(t, dbtest.SQLite(t))
	watch := browsertest.Watch(t, ctx)

	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/playground"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("load the Playground: %v", err)
	}
	query := evalString(t, ctx, editorJS+`; editor(v => v.includes("mutation CreatePayment")).getValue()`)
	key := evalString(t, ctx, `document.getElementById("graphiql").dataset.idempotencyKey`)
	if !strings.Contains(query, "createPayment(") || !strings.HasPrefix(key, "playground-") {
		t.Fatalf("the first tab is not the createPayment example with a fresh key (%q):\n%s", key, query)
	}
	// The headers hint is there; replace it with a real token.
	setHeaders := fmt.Sprintf(editorJS+`; editor(v => v.includes("Authorization")).setValue(%q); "ok"`, `{"Authorization": "Bearer `+token+`"}`)
	if got := evalString(t, ctx, setHeaders); got != "ok" {
		t.Fatalf("set the Authorization header: %s", got)
	}

	run := func(want string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
			t.Fatal(err)
		}
		js := editorJS + fmt.Sprintf(`; (editor(v => v.includes('"data"') && v.includes(%q)) || {getValue: () => ""}).getValue()`, want)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if out := evalString(t, ctx, js); out != "" {
				return out
			}
			time.Sleep(100 * time.Millisecond)
		}
		browsertest.Screenshot(t, ctx, "playground-failed")
		t.Fatalf("no response with %s within 20s", want)
		return ""
	}
	first := run(`"replayed": false`)
	second := run(`"replayed": true`)
	if !strings.Contains(first, `"amount": "49.90"`) || id(first) == "" || id(first) != id(second) ||
		!strings.Contains(second, `"outcome": "REPLAYED"`) {
		t.Errorf("first run:\n%s\nsecond run:\n%s", first, second)
	}
	browsertest.Screenshot(t, ctx, "playground")

	var n int64
	b.db.Gorm.Table("payments").Where("client_id = ?", "playground").Count(&n)
	if n != 1 {
		t.Errorf("%d payments from the Playground, want 1", n)
	}
	if n := watch.Check(t, b.srv.URL); n < 5 {
		t.Errorf("only %d requests recorded; the page makes more", n)
	}
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
