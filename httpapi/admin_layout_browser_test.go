package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// linesJS counts, for each element sel selects, the lines its text takes
// (one client rect per line of an inline box), and lists those that take
// more than one.
func linesJS(sel string) string {
	return `[...document.querySelectorAll(` + "`" + sel + "`" + `)].filter(e => e.getClientRects().length > 1)
  .map(e => e.innerText + " (" + e.getClientRects().length + " lines)").join("\n") || (document.querySelector(` + "`" + sel + "`" + `) ? "" : "none")`
}

// TestAdminLayoutInBrowser: on the tokens and audit pages at a laptop's
// width, dates and action names stay on one line; revoking a token and
// disabling an account each ask first, in the page, and do nothing until
// the second click. Screenshots of each step are saved when
// CMPAY_SCREENSHOTS names a folder.
func TestAdminLayoutInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 90*time.Second)
	b := setup(t, dbtest.SQLite(t))
	b.newToken(t, "shop-with-a-long-client-id", auth.PaymentsRead, auth.PaymentsWrite, auth.MetricsRead, auth.WebhooksManage)
	b.newToken(t, "", auth.PaymentsRead)
	if _, err := b.staff.Add(t.Context(), staff.CommandLine, "vic", staff.Viewer, "vic-password-1"); err != nil {
		t.Fatal(err)
	}
	browsertest.SignIn(t, ctx, b.srv.URL, "admin", adminPassword)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// A laptop with the window half the screen: the tables have little room.
	run("tokens page", chromedp.EmulateViewport(900, 900), chromedp.Navigate(b.srv.URL+"/admin/tokens"), chromedp.WaitVisible(chromedp.CSS("table.tokens")))
	if broken := evalString(t, ctx, linesJS(`table.tokens td[data-label="Created"] time`)); broken != "" {
		t.Errorf("dates on more than one line (or none shown):\n%s", broken)
	}
	browsertest.Screenshot(t, ctx, "admin-tokens")

	// The red button is behind a first click that only opens the question.
	visible := `(sel => { const e = document.querySelector(sel); return e && e.checkVisibility() && e.getClientRects().length > 0 ? "visible" : "hidden" })`
	if got := evalString(t, ctx, visible+`("table.tokens form[action$='/revoke'] button")`); got != "hidden" {
		t.Errorf("the revoke button is %s before anything was clicked", got)
	}
	run("ask to revoke", chromedp.Click(chromedp.CSS("table.tokens details.confirm summary")))
	if got := evalString(t, ctx, visible+`("table.tokens form[action$='/revoke'] button")`); got != "visible" {
		t.Fatalf("after the first click the confirming button is %s", got)
	}
	tokens, err := b.tokens.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		if tok.RevokedAt != nil {
			t.Fatalf("token %s revoked by opening the question", tok.ID)
		}
	}
	browsertest.Screenshot(t, ctx, "admin-tokens-confirm-revoke")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("table.tokens details[open] form button"))); err != nil {
		t.Fatal(err)
	}
	if got := evalString(t, ctx, `document.querySelector(".done") ? document.querySelector(".done").innerText : ""`); !strings.Contains(got, "was revoked") {
		t.Errorf("after confirming: %q", got)
	}

	run("staff page", chromedp.Navigate(b.srv.URL+"/admin/staff"), chromedp.WaitVisible(chromedp.CSS("table.staff")))
	if got := evalString(t, ctx, visible+`("table.staff form[action$='/disable'] button")`); got != "hidden" {
		t.Errorf("the disable button is %s before anything was clicked", got)
	}
	run("ask to disable", chromedp.Click(chromedp.CSS("table.staff details.confirm summary")))
	if acct, _ := b.staff.Get(t.Context(), "vic"); acct.Disabled {
		t.Fatal("vic disabled by opening the question")
	}
	browsertest.Screenshot(t, ctx, "admin-staff-confirm-disable")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("table.staff details[open] form button"))); err != nil {
		t.Fatal(err)
	}
	if acct, _ := b.staff.Get(t.Context(), "vic"); !acct.Disabled {
		t.Error("vic is not disabled after confirming")
	}

	// The audit log, narrower still: action names whole.
	run("audit log", chromedp.EmulateViewport(800, 900), chromedp.Navigate(b.srv.URL+"/admin/audit"), chromedp.WaitVisible(chromedp.CSS("table.audit")))
	if broken := evalString(t, ctx, linesJS(`table.audit td[data-label="Action"] > *`)); broken != "" {
		t.Errorf("action names broken over lines (or none shown):\n%s", broken)
	}
	if broken := evalString(t, ctx, linesJS(`table.audit td[data-label="Time"] time`)); broken != "" {
		t.Errorf("times broken over lines (or none shown):\n%s", broken)
	}
	browsertest.Screenshot(t, ctx, "admin-audit")
}
