package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestAdminInBrowser is a support agent's visit: sign in, see payments made
// through both APIs (one retried, one whose key was reused for another
// amount), keep only the flagged ones, open the rejected one and read its
// timeline. Screenshots of each step are saved when CMPAY_SCREENSHOTS
// names a folder. The steps share one browser and run in order: the
// flagged list is reached from the full one, the rejected payment from
// the flagged list.
func TestAdminInBrowser(t *testing.T) {
	t.Parallel()
	tab := adminTab{t: t, ctx: browsertest.New(t, 120*time.Second)}
	b := setup(t, dbtest.Postgres(t))
	tab.base = b.srv.URL
	traffic := adminTraffic(t, b)

	watch := browsertest.Watch(t, tab.ctx)
	browsertest.SignIn(t, tab.ctx, tab.base, "admin", adminPassword)
	tab.listIsNewestFirst()
	tab.keepTheFlagged(traffic.plain)
	tab.reusedKeyTimeline(traffic.reusedKey)
	tab.retriedSummary(traffic.retried)
	tab.lookalikePointedOut(traffic.plain, traffic.lookalike)
	tab.fitsAPhone()
	watch.Check(t, tab.base)
}

// adminTab is a browser on the admin, and the shorthands its steps share.
type adminTab struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func (a adminTab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	a.t.Helper()
	if err := chromedp.Do(a.ctx, actions...); err != nil {
		a.t.Fatalf("%s: %v", what, err)
	}
}

// open navigates to path and waits until what sel selects is visible.
func (a adminTab) open(path, sel string) {
	a.t.Helper()
	a.run("open "+path, chromedp.Navigate(a.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// rows is the text of each element sel selects, spaces folded, one a line.
func (a adminTab) rows(sel string) string {
	a.t.Helper()
	return rowTexts(a.t, a.ctx, sel)
}

// rowTexts is the text of each element sel selects in the page, spaces
// folded, one a line.
func rowTexts(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return evalString(t, ctx, `[...document.querySelectorAll("`+sel+`")].map(r => r.innerText.replace(/\s+/g, " ")).join("\n")`)
}

// adminTrafficIDs are the payments adminTraffic made that the steps open.
type adminTrafficIDs struct{ plain, lookalike, retried, reusedKey string }

// adminTraffic makes payments through the real APIs: a plain one, its
// lookalike under another key, one retried through both APIs, and one
// whose key is reused for another amount.
func adminTraffic(t *testing.T, b *bundle) adminTrafficIDs {
	var ids adminTrafficIDs
	ids.plain = b.create(t, "order-1001", input("shop-7", "19.90", "BRL", "PIX")).Payment.ID
	// The app made a new key for a retry: a second payment the key cannot
	// catch, which the payment page must point out.
	ids.lookalike = b.create(t, "order-1001-retry", input("shop-7", "19.9", "BRL", "PIX")).Payment.ID
	ids.retried = b.create(t, "order-1002", input("shop-7", "250", "BRL", "CREDIT_CARD")).Payment.ID
	b.create(t, "order-1002", input("shop-7", "250.00", "BRL", "CREDIT_CARD"))
	res, body := b.raw(t, "POST", "/api/payments", restHeaders("order-1002"), `{"clientId":"shop-7","amount":250,"currency":"BRL","method":"CREDIT_CARD"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("REST replay: %d %s", res.StatusCode, body)
	}
	res, body = b.raw(t, "POST", "/api/payments", restHeaders("checkout-7f3a-2b91-4c5d-9e8f-0a1b2c3d4e5f-attempt-1"), `{"clientId":"globex","amount":"1200","currency":"JPY","method":"PIX"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("REST create: %d %s", res.StatusCode, body)
	}
	var reusedKey struct{ ID string }
	json.Unmarshal(body, &reusedKey)
	ids.reusedKey = reusedKey.ID
	conflict := b.gql(t, createMutation, map[string]any{"key": "checkout-7f3a-2b91-4c5d-9e8f-0a1b2c3d4e5f-attempt-1", "input": input("globex", "1500", "JPY", "DEBIT_CARD")})
	if conflict.code() != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("conflict: %+v", conflict)
	}
	return ids
}

// listIsNewestFirst: the list, newest first, one row per payment, the
// flags.
func (a adminTab) listIsNewestFirst() {
	t, ctx := a.t, a.ctx
	a.open("/admin", "table.payments")
	browsertest.Screenshot(t, ctx, "admin-list")
	rows := a.rows("table.payments tbody tr")
	lines := strings.Split(rows, "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "globex") || !strings.Contains(lines[0], "rejected ×1") ||
		!strings.Contains(lines[1], "replayed ×2") || !strings.Contains(lines[1], "250.00 BRL") ||
		!strings.Contains(lines[2], "order-1001-retry") || !strings.Contains(lines[3], "19.90 BRL") {
		t.Fatalf("rows, newest first:\n%s", rows)
	}
	if got := evalString(t, ctx, `document.querySelector(".totals").innerText.replace(/\s+/g, " ")`); !strings.Contains(got, "4 created") ||
		!strings.Contains(got, "2 replayed") || !strings.Contains(got, "1 rejected") {
		t.Errorf("last 24 hours: %s", got)
	}
}

// keepTheFlagged keeps the flagged payments, with the form, as a user
// would.
func (a adminTab) keepTheFlagged(plain string) {
	t, ctx := a.t, a.ctx
	// A click that navigates is waited for until the new page has loaded;
	// waiting for an element could find it on the old page.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name=flagged]`))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`))); err != nil {
		t.Fatal(err)
	}
	here, _ := url.Parse(evalString(t, ctx, `location.href`))
	if here.Query().Get("flagged") != "1" {
		t.Errorf("the filter is not in the URL: %s", here)
	}
	flagged := a.rows("table.payments tbody tr")
	if strings.Count(flagged, "\n") != 1 || strings.Contains(flagged, plain) || strings.Contains(flagged, "19.90") {
		t.Errorf("flagged rows:\n%s", flagged)
	}
	browsertest.Screenshot(t, ctx, "admin-flagged")
}

// reusedKeyTimeline opens, from the flagged list, the payment whose key
// was reused, and reads its timeline.
func (a adminTab) reusedKeyTimeline(reusedKey string) {
	t, ctx := a.t, a.ctx
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`a[href="/admin/payments/`+reusedKey+`"]`))); err != nil {
		t.Fatal(err)
	}
	timeline := a.rows("table.timeline > tbody > tr")
	steps := strings.Split(timeline, "\n")
	if len(steps) != 2 || !strings.Contains(steps[0], "CREATED") || !strings.Contains(steps[0], "rest") ||
		!strings.Contains(steps[1], "REJECTED") || !strings.Contains(steps[1], "graphql") ||
		!strings.Contains(steps[1], "amount 1,200 JPY 1,500 JPY") || !strings.Contains(steps[1], "method PIX DEBIT_CARD") {
		t.Errorf("timeline:\n%s", timeline)
	}
	if summary := evalString(t, ctx, `document.querySelector(".answer").innerText`); !strings.Contains(summary, "One payment for this key") || !strings.Contains(summary, "different") {
		t.Errorf("summary: %s", summary)
	}
	if key := evalString(t, ctx, `document.querySelector(".full-key").innerText`); key != "checkout-7f3a-2b91-4c5d-9e8f-0a1b2c3d4e5f-attempt-1" {
		t.Errorf("full key on the payment page: %q", key)
	}
	browsertest.Screenshot(t, ctx, "admin-payment-rejected")
}

// retriedSummary: the retried payment's page names each API's retry.
func (a adminTab) retriedSummary(retried string) {
	t, ctx := a.t, a.ctx
	a.open("/admin/payments/"+retried, `table.timeline`)
	summary := evalString(t, ctx, `document.querySelector(".answer").innerText.replace(/\s+/g, " ")`)
	for _, want := range []string{"The client (GraphQL API) retried the create request once with the same key order-1002",
		"The client (REST API) retried the create request once with the same key order-1002", "nothing was charged again"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the retried payment's summary lacks %q: %s", want, summary)
		}
	}
	browsertest.Screenshot(t, ctx, "admin-payment-replayed")
}

// lookalikePointedOut: the first payment's page points at the lookalike
// made with another key.
func (a adminTab) lookalikePointedOut(plain, lookalike string) {
	t, ctx := a.t, a.ctx
	a.open("/admin/payments/"+plain, `table.timeline`)
	warning := evalString(t, ctx, `(document.querySelector(".answer.warn") || {innerText: ""}).innerText`)
	others := evalString(t, ctx, `(document.querySelector("table[aria-labelledby=lookalikes]") || {innerText: ""}).innerText`)
	if !strings.Contains(warning, "1 other payment of 19.90 BRL") || !strings.Contains(others, "order-1001-retry") || strings.Contains(others, "order-1001\t") {
		t.Errorf("lookalike warning %q, table %q; want %s pointed out", warning, others, lookalike)
	}
	browsertest.Screenshot(t, ctx, "admin-payment-lookalike")
}

// fitsAPhone: at 375 px wide, nothing is wider than the screen.
func (a adminTab) fitsAPhone() {
	a.run("a phone's width", chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(a.base+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`table.payments`)))
	if w := evalString(a.t, a.ctx, `String(document.documentElement.scrollWidth)`); w != "375" {
		a.t.Errorf("at 375 px the page is %s px wide", w)
	}
	browsertest.Screenshot(a.t, a.ctx, "admin-list-375px")
}
