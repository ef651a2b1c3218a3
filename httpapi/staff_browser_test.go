package httpapi_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

// TestStaffInBrowser is support staff at work in a real Chromium: a wrong
// password, a viewer who sees no action and whose forged refund is
// refused, sign-out (after which the old cookie is worth nothing), an
// operator's refund, a double-clicked refund applied once, the audit log
// naming who did it, a cross-site form refused, and the CSV of a filter
// holding exactly its rows. Screenshots of each step are saved when
// CMPAY_SCREENSHOTS names a folder. The steps share one browser, each
// starting where the one before left it, so they run in order.
func TestStaffInBrowser(t *testing.T) {
	t.Parallel()
	v := newStaffVisit(t)
	first, second := v.seed()
	watch := browsertest.Watch(t, v.ctx)
	v.wrongPassword(first)
	v.viewerCannotRefund(first)
	v.signOutEndsTheSession()
	v.operatorRefunds(first)
	v.doubleClick(second)
	v.doubleClickRefundedOnce(second)
	watch.Check(t, v.base)
	attacker := v.crossSiteRefused(first)
	v.auditLogNamesWhoRefunded(first, second, attacker)
	v.csvHoldsTheFilter()
}

// refundPacer slows refund submissions, as a busy day may: long enough for
// a double click to send its second submission before the first one's
// page arrives.
type refundPacer struct {
	// done counts the refund submissions the server has finished: one
	// whose page the browser dropped is still answered.
	posts, done atomic.Int32
	// Once armed, the pacer holds the first refund submission until a
	// second one arrives (at most 5 s): a double click's second press then
	// always finds the first unanswered, however slow the browser's round
	// trips.
	mu      sync.Mutex
	armed   bool
	waiting chan struct{}
}

func (p *refundPacer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/refund") {
			p.posts.Add(1)
			defer p.done.Add(1)
			p.mu.Lock()
			if p.armed && p.waiting == nil {
				ch := make(chan struct{})
				p.waiting = ch
				p.mu.Unlock()
				select {
				case <-ch:
				case <-time.After(5 * time.Second):
				}
			} else {
				if p.armed {
					close(p.waiting)
					p.armed, p.waiting = false, nil
				}
				p.mu.Unlock()
			}
			time.Sleep(300 * time.Millisecond)
		}
		h.ServeHTTP(w, r)
	})
}

func (p *refundPacer) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// staffVisit is the browser TestStaffInBrowser's steps share, and the
// server it talks to.
type staffVisit struct {
	adminTab
	b     *bundle
	pacer *refundPacer
}

func newStaffVisit(t *testing.T) *staffVisit {
	v := &staffVisit{adminTab: adminTab{t: t, ctx: browsertest.New(t, 180*time.Second)}, b: setup(t, dbtest.Postgres(t)), pacer: &refundPacer{}}
	srv := httptest.NewServer(v.pacer.wrap(v.b.handler))
	t.Cleanup(srv.Close)
	v.base = srv.URL
	return v
}

// seed adds a viewer and an operator, two captured payments to refund and
// more than a page of payments for the CSV.
func (v *staffVisit) seed() (first, second payments.Payment) {
	t, b := v.t, v.b
	for _, who := range []struct {
		name string
		role staff.Role
	}{{"vic", staff.Viewer}, {"olga", staff.Operator}} {
		if _, err := b.staff.Add(t.Context(), staff.CommandLine, who.name, who.role, who.name+"-password"); err != nil {
			t.Fatal(err)
		}
	}
	first = b.newPayment(t, "shop-7", "order-1", "50", true)
	second = b.newPayment(t, "shop-7", "order-2", "80", true)
	for i := range 60 { // more than a page of the list
		b.newPayment(t, "csv-shop", fmt.Sprintf("csv-%02d", i), "1.5", i%2 == 0)
	}
	b.newPayment(t, "csv-shop-2", "not-this-one", "1", true)
	return first, second
}

func (v *staffVisit) submit(what, sel string) *network.Response {
	v.t.Helper()
	res, err := chromedp.RunResponse(v.ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
	return res
}

// text is the text of what sel selects, its spaces folded; "" when the
// page has no such element.
func (v *staffVisit) text(sel string) string {
	v.t.Helper()
	return evalString(v.t, v.ctx, `(document.querySelector(`+"`"+sel+"`"+`) || {innerText: ""}).innerText.replace(/\s+/g, " ").trim()`)
}

func (v *staffVisit) signOut() {
	v.t.Helper()
	if res := v.submit("sign out", `form.signout button`); !strings.HasSuffix(res.URL, "/admin/login") {
		v.t.Fatalf("sign out landed on %s", res.URL)
	}
}

// wrongPassword: the form again, saying so, and no way in.
func (v *staffVisit) wrongPassword(first payments.Payment) {
	v.run("open the sign-in", chromedp.Navigate(v.base+"/admin/payments/"+first.ID),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "olga"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "not-her-password"))
	if res := v.submit("wrong password", `form[action="/admin/login"] button`); res.Status != http.StatusUnauthorized ||
		v.text(`[role=alert]`) != "Wrong username or password." {
		v.t.Fatalf("wrong password: %d %q", res.Status, v.text(`[role=alert]`))
	}
	browsertest.Screenshot(v.t, v.ctx, "staff-wrong-password")
}

// viewerCannotRefund: a viewer sees the payment and no action; a refund
// forged from the page itself (the viewer's own session, this site) is
// refused.
func (v *staffVisit) viewerCannotRefund(first payments.Payment) {
	t, ctx := v.t, v.ctx
	browsertest.SignIn(t, ctx, v.base, "vic", "vic-password")
	v.run("viewer opens a payment", chromedp.Navigate(v.base+"/admin/payments/"+first.ID), chromedp.WaitVisible(chromedp.CSS(`table.timeline`)))
	if n := evalString(t, ctx, `String(document.querySelectorAll("form[action$=refund], form[action$=capture], form[action$=cancel], .actions-panel").length)`); n != "0" {
		t.Errorf("a viewer sees %s action forms", n)
	}
	if nav := v.text(`nav[aria-label=Main]`); strings.Contains(nav, "Staff") || strings.Contains(nav, "Audit") {
		t.Errorf("a viewer's navigation: %q", nav)
	}
	browsertest.Screenshot(t, ctx, "staff-viewer-payment")
	forge := `(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/admin/payments/` + first.ID + `/refund";
		for (const [k, v] of [["amount", "5"], ["idempotency_key", "admin-forged-1"]]) {
			const i = document.createElement("input"); i.name = k; i.value = v; f.appendChild(i) }
		document.body.appendChild(f); f.submit(); return true })()`
	res, err := chromedp.RunResponse(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](forge)(ctx, tg)
		return err
	}))
	if err != nil || res.Status != http.StatusForbidden {
		t.Fatalf("a viewer's forged refund: %v %+v", err, res)
	}
	browsertest.Screenshot(t, ctx, "staff-viewer-forged-refund")
	if v.b.payment(t, first.ID).Refunded.Minor != 0 {
		t.Fatal("a viewer's forged refund was applied")
	}
}

// signOutEndsTheSession: the cookie the browser had opens nothing any
// more.
func (v *staffVisit) signOutEndsTheSession() {
	t, ctx, base := v.t, v.ctx, v.base
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/admin"}})
	if err != nil || len(cookies.Cookies) != 1 || !cookies.Cookies[0].HTTPOnly || cookies.Cookies[0].SameSite != network.CookieSameSiteLax {
		t.Fatalf("cookies before sign-out: %v %+v", err, cookies)
	}
	old := cookies.Cookies[0].Value
	v.signOut()
	stale := v.b.newClient(t)
	if res, _ := stale.do(t, "GET", "/admin", http.Header{"Cookie": {"cmpay_admin=" + old}}, ""); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the signed-out cookie still opens /admin: %d", res.StatusCode)
	}
	if res, err := chromedp.RunResponse(ctx, chromedp.Navigate(base+"/admin")); err != nil || !strings.HasPrefix(res.URL, base+"/admin/login") {
		t.Errorf("after sign-out /admin shows %v %v", res, err)
	}
}

// operatorRefunds: an operator refunds part of the first payment.
func (v *staffVisit) operatorRefunds(first payments.Payment) {
	t, ctx := v.t, v.ctx
	browsertest.SignIn(t, ctx, v.base, "olga", "olga-password")
	v.run("operator opens a payment", chromedp.Navigate(v.base+"/admin/payments/"+first.ID),
		chromedp.WaitVisible(chromedp.CSS(`form.refund`)),
		chromedp.SendKeys(chromedp.CSS(`#refund-amount`), "10"),
		chromedp.SendKeys(chromedp.CSS(`#refund-reason`), "damaged in transit"))
	browsertest.Screenshot(t, ctx, "staff-operator-refund-form")
	v.submit("refund", `form.refund button`)
	if got := v.text(`#result`); !strings.Contains(got, "Refunded 10.00 BRL") || !strings.Contains(got, "PARTIALLY_REFUNDED") || !strings.Contains(got, "40.00 BRL left to refund") {
		t.Errorf("refund confirmation: %q", got)
	}
	if got := v.text(`table.timeline > tbody > tr:last-child`); !strings.Contains(got, "by olga") || !strings.Contains(got, "damaged in transit") {
		t.Errorf("timeline: %q", got)
	}
	browsertest.Screenshot(t, ctx, "staff-operator-refunded")
}

// doubleClick double-clicks the second payment's refund button: two
// submissions of one form. It returns once the browser shows the result
// page and the server has answered both.
func (v *staffVisit) doubleClick(second payments.Payment) {
	t, ctx := v.t, v.ctx
	v.run("open the second payment", chromedp.Navigate(v.base+"/admin/payments/"+second.ID),
		chromedp.WaitVisible(chromedp.CSS(`form.refund`)),
		chromedp.SendKeys(chromedp.CSS(`#refund-amount`), "20"))
	before, doneBefore := v.pacer.posts.Load(), v.pacer.done.Load()
	v.pacer.arm()
	x := evalString(t, ctx, `(() => { const r = document.querySelector("form.refund button").getBoundingClientRect(); return (r.x + r.width/2) + "," + (r.y + r.height/2) })()`)
	var cx, cy float64
	fmt.Sscanf(x, "%f,%f", &cx, &cy)
	// The first submission's navigation is aborted by the second, as in any
	// browser: wait for the page the last one leads to.
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.MouseClickXY(cx, cy)(ctx, tg); err != nil {
			return err
		}
		// A person's double click: the second press comes a tenth of a
		// second later, when the first submission is on its way.
		time.Sleep(120 * time.Millisecond)
		_, err := chromedp.MouseClickXY(cx, cy, chromedp.ClickCount(2))(ctx, tg)
		return err
	})); err != nil {
		t.Fatalf("double click: %v", err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`location.search.includes("done=") && document.readyState === "complete" && !!document.querySelector("#result")`))
		if err == nil && done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the double click, no result page: %v", err)
		}
	}
	if n := v.pacer.posts.Load() - before; n < 2 {
		t.Fatalf("the double click sent %d refund request(s), want 2: the test proves nothing", n)
	}
	// The page shown may be the first-answered submission's; the reload
	// must come after both are answered, or it may miss the replay.
	for deadline := time.Now().Add(15 * time.Second); v.pacer.done.Load()-doneBefore < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the double click's submissions were not both answered")
		}
	}
}

// doubleClickRefundedOnce: the double click made one refund, and the page
// says the second press was the staff member's, not the client's.
func (v *staffVisit) doubleClickRefundedOnce(second payments.Payment) {
	t, ctx := v.t, v.ctx
	if p := v.b.payment(t, second.ID); p.Refunded.Minor != 2000 {
		t.Fatalf("after a double click: %s refunded, want 20.00", p.Refunded)
	}
	v.run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`table.timeline`)))
	if got := v.text(`#result`); !strings.Contains(got, "Already done") || !strings.Contains(got, "Refunded 20.00 BRL") {
		t.Errorf("after a double click the page says %q", got)
	}
	if n := evalString(t, ctx, `String(document.querySelectorAll("table.refunds tbody tr").length)`); n != "1" {
		t.Errorf("%s refunds listed, want 1", n)
	}
	// Support staff must not read the staff member's second press as the
	// client retrying the payment.
	if got := v.text(`.answer`); !strings.Contains(got, "Staff member olga resubmitted the refund form once") ||
		!strings.Contains(got, "nothing was refunded again") || strings.Contains(got, "The client retried") {
		t.Errorf("after a double click the summary says %q", got)
	}
	browsertest.Screenshot(t, ctx, "staff-double-click")
}

// crossSiteRefused: another site's page posting a refund form to us is
// refused, whether another site (the cookie is not even sent) or another
// origin of the same site (the cookie is sent). It returns the other
// origin's URL, which the audit log names.
func (v *staffVisit) crossSiteRefused(first payments.Payment) string {
	t := v.t
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s/admin/payments/%s/refund"><input name="amount" value="1">
			<input name="idempotency_key" value="admin-evil-%d"><button>Win a prize</button></form>`, v.base, first.ID, time.Now().UnixNano())
	}))
	t.Cleanup(attacker.Close)
	port := attacker.URL[strings.LastIndex(attacker.URL, ":")+1:]
	for _, site := range []string{"http://localhost:" + port, attacker.URL} {
		tab, cancel := chromedp.NewContext(v.ctx)
		if err := chromedp.Do(tab, chromedp.Navigate(site), chromedp.WaitVisible(chromedp.CSS("button"))); err != nil {
			t.Fatal(err)
		}
		res, err := chromedp.RunResponse(tab, chromedp.Click(chromedp.CSS("button")))
		if err != nil || res.Status != http.StatusForbidden {
			t.Errorf("a form on %s posting a refund: %v %+v, want 403", site, err, res)
		}
		browsertest.Screenshot(t, tab, "staff-cross-site-"+url.PathEscape(strings.TrimPrefix(site, "http://")))
		cancel()
	}
	if p := v.b.payment(t, first.ID); p.Refunded.Minor != 1000 {
		t.Errorf("a cross-site refund was applied: %s refunded", p.Refunded)
	}
	return attacker.URL
}

// auditLogNamesWhoRefunded: the admin reads the audit log: who refunded,
// from where, how it ended.
func (v *staffVisit) auditLogNamesWhoRefunded(first, second payments.Payment, attacker string) {
	t, ctx := v.t, v.ctx
	v.signOut()
	browsertest.SignIn(t, ctx, v.base, "admin", adminPassword)
	v.run("audit log", chromedp.Navigate(v.base+"/admin/audit?action=refund"), chromedp.WaitVisible(chromedp.CSS(`table.audit`)))
	rows := strings.Split(v.rows("table.audit tbody tr"), "\n")
	// The form from another origin of the same site came with olga's
	// cookie: it is on record, refused; the other site's came without.
	want := []string{"olga 127.0.0.1 refund " + first.ID + " denied refused as cross-site, nothing was done (Sec-Fetch-Site same-site, Origin " + attacker + ")",
		"olga 127.0.0.1 refund " + second.ID + " already done", "olga 127.0.0.1 refund " + second.ID + " applied 20.00 BRL",
		"olga 127.0.0.1 refund " + first.ID + " applied 10.00 BRL; reason: damaged in transit", "vic 127.0.0.1 refund " + first.ID + " denied"}
	for i, w := range want {
		if i >= len(rows) || !strings.Contains(rows[i], w) {
			t.Errorf("audit row %d: %q, want it to contain %q\nall rows:\n%s", i, rows[min(i, len(rows)-1)], w, strings.Join(rows, "\n"))
		}
	}
	browsertest.Screenshot(t, ctx, "staff-audit-log")
}

// csvHoldsTheFilter: the CSV of a filter holds every payment of csv-shop
// (more than a page of the list), nothing else.
func (v *staffVisit) csvHoldsTheFilter() {
	t := v.t
	v.run("filter", chromedp.Navigate(v.base+"/admin?client=csv-shop&status=CAPTURED"), chromedp.WaitVisible(chromedp.CSS(`a.export`)))
	body := browsertest.Download(t, v.ctx, `a.export`)
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var keys, wantKeys []string
	for _, r := range records[1:] {
		keys = append(keys, r[9])
		if r[2] != "csv-shop" || r[6] != string(payments.StatusCaptured) {
			t.Errorf("row %q", r)
		}
	}
	for i := 58; i >= 0; i -= 2 {
		wantKeys = append(wantKeys, fmt.Sprintf("csv-%02d", i))
	}
	if records[0][0] != "id" || !slices.Equal(keys, wantKeys) {
		t.Errorf("CSV of client csv-shop, captured: header %q, keys %q; want %q", records[0], keys, wantKeys)
	}
}
