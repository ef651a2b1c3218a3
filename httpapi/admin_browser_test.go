package httpapi_test

import (
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
// names a folder.
func TestAdminInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 120*time.Second)
	b := setup(t, dbtest.Postgres(t))

	// Traffic, through the real APIs.
	plain := b.create(t, "order-1001", input("shop-7", "19.90", "BRL", "PIX")).Payment
	// The app made a new key for a retry: a second payment the key cannot
	// catch, which the payment page must point out.
	lookalike := b.create(t, "order-1001-retry", input("shop-7", "19.9", "BRL", "PIX")).Payment
	retried := b.create(t, "order-1002", input("shop-7", "250", "BRL", "CREDIT_CARD")).Payment
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
	conflict := b.gql(t, createMutation, map[string]any{"key": "checkout-7f3a-2b91-4c5d-9e8f-0a1b2c3d4e5f-attempt-1", "input": input("globex", "1500", "JPY", "DEBIT_CARD")})
	if conflict.code() != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("conflict: %+v", conflict)
	}

	watch := browsertest.Watch(t, ctx)
	browsertest.SignIn(t, ctx, b.srv.URL, "admin", adminPassword)

	// The list: newest first, one row per payment, the flags.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/admin"),
		chromedp.WaitVisible(chromedp.CSS("table.payments")),
	); err != nil {
		t.Fatalf("open /admin: %v", err)
	}
	browsertest.Screenshot(t, ctx, "admin-list")
	rows := evalString(t, ctx, `[...document.querySelectorAll("table.payments tbody tr")].map(r => r.innerText.replace(/\s+/g, " ")).join("\n")`)
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

	// Keep the flagged ones, with the form, as a user would.
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
	flagged := evalString(t, ctx, `[...document.querySelectorAll("table.payments tbody tr")].map(r => r.innerText.replace(/\s+/g, " ")).join("\n")`)
	if strings.Count(flagged, "\n") != 1 || strings.Contains(flagged, plain.ID) || strings.Contains(flagged, "19.90") {
		t.Errorf("flagged rows:\n%s", flagged)
	}
	browsertest.Screenshot(t, ctx, "admin-flagged")

	// Open the payment whose key was reused, and read its timeline.
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`a[href="/admin/payments/`+reusedKey.ID+`"]`))); err != nil {
		t.Fatal(err)
	}
	timeline := evalString(t, ctx, `[...document.querySelectorAll("table.timeline > tbody > tr")].map(r => r.innerText.replace(/\s+/g, " ")).join("\n")`)
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

	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/admin/payments/"+retried.ID),
		chromedp.WaitVisible(chromedp.CSS(`table.timeline`)),
	); err != nil {
		t.Fatal(err)
	}
	summary := evalString(t, ctx, `document.querySelector(".answer").innerText.replace(/\s+/g, " ")`)
	for _, want := range []string{"The client (GraphQL API) retried the create request once with the same key order-1002",
		"The client (REST API) retried the create request once with the same key order-1002", "nothing was charged again"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the retried payment's summary lacks %q: %s", want, summary)
		}
	}
	browsertest.Screenshot(t, ctx, "admin-payment-replayed")

	// The first payment's page points at the lookalike made with another key.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/admin/payments/"+plain.ID),
		chromedp.WaitVisible(chromedp.CSS(`table.timeline`)),
	); err != nil {
		t.Fatal(err)
	}
	warning := evalString(t, ctx, `(document.querySelector(".answer.warn") || {innerText: ""}).innerText`)
	others := evalString(t, ctx, `(document.querySelector("table[aria-labelledby=lookalikes]") || {innerText: ""}).innerText`)
	if !strings.Contains(warning, "1 other payment of 19.90 BRL") || !strings.Contains(others, "order-1001-retry") || strings.Contains(others, "order-1001\t") {
		t.Errorf("lookalike warning %q, table %q; want %s pointed out", warning, others, lookalike.ID)
	}
	browsertest.Screenshot(t, ctx, "admin-payment-lookalike")

	// A phone: 375 px wide, nothing wider than the screen.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(b.srv.URL+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`table.payments`)),
	); err != nil {
		t.Fatal(err)
	}
	if w := evalString(t, ctx, `String(document.documentElement.scrollWidth)`); w != "375" {
		t.Errorf("at 375 px the page is %s px wide", w)
	}
	browsertest.Screenshot(t, ctx, "admin-list-375px")

	watch.Check(t, b.srv.URL)
}
