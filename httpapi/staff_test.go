package httpapi_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/web"
)

// newPayment creates a payment through the service, authorized only when
// capture is false.
func (b *bundle) newPayment(t testing.TB, client, key, amount string, capture bool) payments.Payment {
	t.Helper()
	res, err := b.svc.Create(context.Background(), payments.CreateRequest{ClientID: client, Amount: amount, Currency: "BRL",
		Method: payments.MethodPix, IdempotencyKey: key, Capture: &capture, Origin: payments.Origin{Transport: "graphql"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Payment
}

func (b *bundle) payment(t testing.TB, id string) payments.Payment {
	t.Helper()
	p, err := b.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// formKey is the idempotency key the payment page's form for action carries.
func formKey(doc *goquery.Document, action string) string {
	return doc.Find("form."+action+" input[name=idempotency_key]").AttrOr("value", "")
}

// auditLines reads the first page of the audit log as the admin sees it:
// "action|staff member|address|target|outcome|detail", newest first.
func (b *bundle) auditLines(t *testing.T, query string) []string {
	t.Helper()
	res, doc := b.asAdmin(t).get(t, "/admin/audit"+query)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("audit page: %d", res.StatusCode)
	}
	return doc.Find("table.audit tbody tr").Map(func(_ int, tr *goquery.Selection) string {
		cell := func(label string) string {
			return strings.TrimSpace(tr.Find(`td[data-label="` + label + `"]`).Text())
		}
		return strings.Join([]string{cell("Action"), cell("Staff member"), cell("Address"), cell("Target"), cell("Outcome"), cell("Detail")}, "|")
	})
}

// TestAdminRoles calls every admin route as each role: a request beyond
// one's role, GET or POST, is refused with 403, changes nothing, and is
// audited; within it, it works.
func TestAdminRoles(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		t.Run("every route is called as every role", func(t *testing.T) {
			// Sign-out is, last, by every role in TestAdminSignIn and the
			// browser test.
			all := adminRoleCalls(t, b, "cover")
			for _, rt := range web.AdminRoutes() {
				method, pattern, _ := strings.Cut(rt.Pattern, " ")
				covered := pattern == "/admin/logout"
				for _, c := range all {
					path, _, _ := strings.Cut(c.path, "?")
					if c.method == method && routeMatches(pattern, path) {
						covered = true
					}
				}
				if !covered {
					t.Errorf("%s is not called as every role", rt.Pattern)
				}
			}
		})
		// The steps below follow each other: what the roles' calls did
		// is what the later ones look for.
		callAsEachRole(t, b)
		nothingBeyondARoleDone(t, b)
		// Each refusal is in the audit log, with who tried.
		denied := b.auditLines(t, "?actor=the-viewer")
		var got []string
		for _, l := range denied {
			if f := strings.Split(l, "|"); f[4] == "denied" {
				got = append(got, f[0])
			}
		}
		want := []string{"token.revoke", "token.create", "tokens.view", "audit.view", "staff.disable", "staff.role", "staff.add", "staff.view", "webhook.resend", "refund", "cancel", "capture"}
		if !slices.Equal(got, want) {
			t.Errorf("a viewer's denied actions in the audit log: %q, want %q", got, want)
		}
	})
}

// adminCall is one request to an admin route, with its form if a POST.
type adminCall struct {
	method, path string
	form         url.Values
}

// adminRoleCalls is a call of every admin route, on payments, a staff
// account and a token made fresh for role, so that each role's allowed
// actions succeed. Those a viewer may make come first (7), then an
// operator's (11), then the rest, the admin's.
func adminRoleCalls(t *testing.T, b *bundle, role string) []adminCall {
	authorized := b.newPayment(t, "shop", role+"-auth", "20", false)
	auth2 := b.newPayment(t, "shop", role+"-auth2", "20", false)
	captured := b.newPayment(t, "shop", role+"-captured", "20", true)
	key := func(what string) []string { return []string{"admin-test-" + role + "-" + what} }
	target := "target-" + role
	if _, err := b.staff.Add(t.Context(), staff.CommandLine, target, staff.Viewer, ""); err != nil {
		t.Fatal(err)
	}
	tok, _, err := b.tokens.Create(t.Context(), "revoke-"+role, "", auth.DefaultScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return []adminCall{
		{"GET", "/admin", nil},
		{"GET", "/admin?flagged=1", nil},
		{"GET", "/admin/payments/" + captured.ID, nil},
		{"GET", "/admin/payments.csv?client=shop", nil},
		{"GET", "/admin/account", nil},
		{"POST", "/admin/account", url.Values{"current_password": {"the-" + role + "-password"},
			"new_password": {"the-" + role + "-password-2"}, "confirm_password": {"the-" + role + "-password-2"}}},
		{"GET", "/admin/webhooks", nil},
		{"POST", "/admin/payments/" + authorized.ID + "/capture", url.Values{"amount": {"5"}, "idempotency_key": key("capture")}},
		{"POST", "/admin/payments/" + auth2.ID + "/cancel", url.Values{"idempotency_key": key("cancel")}},
		{"POST", "/admin/payments/" + captured.ID + "/refund", url.Values{"amount": {"1"}, "idempotency_key": key("refund")}},
		{"POST", "/admin/webhooks/deliveries/1/resend", nil},
		{"GET", "/admin/staff", nil},
		{"POST", "/admin/staff", url.Values{"username": {"new-" + role}, "role": {"viewer"}}},
		{"POST", "/admin/staff/" + target + "/role", url.Values{"role": {"operator"}}},
		{"POST", "/admin/staff/" + target + "/disable", nil},
		{"GET", "/admin/audit", nil},
		{"GET", "/admin/tokens", nil},
		{"POST", "/admin/tokens", url.Values{"name": {"token-" + role}, "scope": {"payments:read"}}},
		{"POST", "/admin/tokens/" + tok.ID + "/revoke", nil},
	}
}

// callAsEachRole signs in a staff member of each role and makes every
// call: within the role it works, beyond it it is refused with 403.
func callAsEachRole(t *testing.T, b *bundle) {
	// What each role may do: the first n calls.
	allowed := map[staff.Role]int{staff.Viewer: 7, staff.Operator: 11, staff.Admin: 19}
	for _, role := range staff.Roles {
		c := b.addStaff(t, "the-"+string(role), role)
		for i, call := range adminRoleCalls(t, b, string(role)) {
			var res *http.Response
			if call.method == "GET" {
				res, _ = c.get(t, call.path)
			} else {
				res, _ = c.post(t, call.path, call.form)
			}
			ok := res.StatusCode == http.StatusOK || res.StatusCode == http.StatusSeeOther && !strings.HasPrefix(res.Header.Get("Location"), "/admin/login")
			if i < allowed[role] && !ok {
				t.Errorf("%s: %s %s: %d, want it allowed", role, call.method, call.path, res.StatusCode)
			}
			if i >= allowed[role] && res.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %s %s: %d, want 403", role, call.method, call.path, res.StatusCode)
			}
		}
	}
}

// nothingBeyondARoleDone: after callAsEachRole, what a role may not do was
// not done, and what it may was.
func nothingBeyondARoleDone(t *testing.T, b *bundle) {
	if p, _ := b.svc.List(t.Context(), payments.Filter{IdempotencyKey: "viewer-captured"}, 1, ""); p.Payments[0].Refunded.Minor != 0 {
		t.Error("a viewer's refund was applied")
	}
	if p, _ := b.svc.List(t.Context(), payments.Filter{IdempotencyKey: "operator-captured"}, 1, ""); p.Payments[0].Refunded.Minor != 100 {
		t.Error("an operator's refund was not applied")
	}
	for _, who := range []string{"new-viewer", "new-operator"} {
		if _, err := b.staff.Get(t.Context(), who); err == nil {
			t.Errorf("%s was added by a non-admin", who)
		}
	}
	if acct, _ := b.staff.Get(t.Context(), "target-operator"); acct.Disabled || acct.Role != staff.Viewer {
		t.Error("an operator changed an account")
	}
	if acct, _ := b.staff.Get(t.Context(), "target-admin"); !acct.Disabled || acct.Role != staff.Operator {
		t.Error("an admin could not change an account")
	}
}

// routeMatches reports whether path matches a ServeMux pattern's path,
// each {wildcard} standing for one segment.
func routeMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// TestAdminActions: an operator captures and refunds from the payment
// page; a double submit applies once and says it was done already; what
// the rules refuse shows on the page and does nothing; every action is in
// the audit log with the staff member, the address and the outcome. The
// steps follow each other on one payment, each using the forms the last
// page rendered.
func TestAdminActions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		a := &operatorActions{t: t, b: b, op: b.addStaff(t, "olga", staff.Operator)}
		a.id = b.newPayment(t, "shop-7", "order-1", "50", false).ID
		a.page = "/admin/payments/" + a.id
		capKey := a.authorizedForms()
		refundKey := a.capturePart(capKey)
		a.refundTwice(refundKey)
		a.refusedByTheRules(refundKey)

		// The audit log, newest first: who, from where, what, how it ended.
		got := b.auditLines(t, "?actor=olga")
		want := []string{
			"refund|olga|127.0.0.1|pay_nope|failed|no such payment",
			"refund|olga|127.0.0.1|" + a.id + "|rejected|2.00 BRL; the idempotency key had been used for another request",
			"cancel|olga|127.0.0.1|" + a.id + "|refused|the payment's status did not allow it",
			"refund|olga|127.0.0.1|" + a.id + "|failed|idempotencyKey must not be empty or only whitespace",
			"refund|olga|127.0.0.1|" + a.id + "|failed|enter the amount to refund",
			"refund|olga|127.0.0.1|" + a.id + "|failed|amount is not a decimal number; send it like \"10.50\"",
			"refund|olga|127.0.0.1|" + a.id + "|refused|100.00 BRL; more than was available",
			"refund|olga|127.0.0.1|" + a.id + "|already done (replayed)|10.50 BRL; reason: customer asked",
			"refund|olga|127.0.0.1|" + a.id + "|applied|10.50 BRL; reason: customer asked",
			"capture|olga|127.0.0.1|" + a.id + "|applied|30.00 BRL",
			"sign-in|olga|127.0.0.1|olga|ok|",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := b.auditLines(t, "?actor=olga&action=capture"); len(got) != 1 {
			t.Errorf("filtered by action: %q", got)
		}
	})
}

// operatorActions is an operator at one payment's page, for
// TestAdminActions' steps.
type operatorActions struct {
	t        *testing.T
	b        *bundle
	op       *staffClient
	id, page string
}

// authorizedForms: an authorized payment's page has capture and cancel, no
// refund; a fresh key per form and per render. It returns the capture
// form's key.
func (a *operatorActions) authorizedForms() string {
	t := a.t
	_, doc := a.op.get(t, a.page)
	capKey, cancelKey := formKey(doc, "capture"), formKey(doc, "cancel")
	if !strings.HasPrefix(capKey, "admin-") || len(capKey) < 30 || cancelKey == capKey || doc.Find("form.refund").Length() != 0 {
		t.Fatalf("forms of an authorized payment: capture key %q, cancel key %q, refund forms %d", capKey, cancelKey, doc.Find("form.refund").Length())
	}
	if _, again := a.op.get(t, a.page); formKey(again, "capture") == capKey {
		t.Error("two renders carry the same key")
	}
	if v, _ := doc.Find("form.capture input[name=amount]").Attr("value"); v != "50.00" {
		t.Errorf("capture amount prefilled with %q", v)
	}
	return capKey
}

// capturePart captures part of the payment and reads the page it leads
// to; it returns that page's refund form's key.
func (a *operatorActions) capturePart(capKey string) string {
	t := a.t
	res, _ := a.op.post(t, a.page+"/capture", url.Values{"amount": {"30"}, "idempotency_key": {capKey}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), a.page+"?done=") {
		t.Fatalf("capture: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	_, doc := a.op.get(t, res.Header.Get("Location"))
	if got := strings.Join(strings.Fields(doc.Find("#result").Text()), " "); !strings.Contains(got, "Captured 30.00 BRL") ||
		!strings.Contains(got, "now CAPTURED") || !strings.Contains(got, "30.00 BRL captured") {
		t.Errorf("capture confirmation: %q", got)
	}
	if got := doc.Find("table.timeline tbody tr").Last().Find(".actor").Text(); got != "by olga" {
		t.Errorf("timeline actor %q", got)
	}
	return formKey(doc, "refund")
}

// refundTwice refunds twice with the same form (a double click): once
// applied, and the second page says it was done already.
func (a *operatorActions) refundTwice(refundKey string) {
	t := a.t
	form := url.Values{"amount": {"10.5"}, "reason": {"customer asked"}, "idempotency_key": {refundKey}}
	first, _ := a.op.post(t, a.page+"/refund", form)
	second, _ := a.op.post(t, a.page+"/refund", form)
	if first.StatusCode != http.StatusSeeOther || second.StatusCode != http.StatusSeeOther {
		t.Fatalf("refunds: %d, %d", first.StatusCode, second.StatusCode)
	}
	if got := a.b.payment(t, a.id); got.Refunded.Minor != 1050 || got.Status != payments.StatusPartiallyRefunded {
		t.Fatalf("after a double submit: refunded %s, %s", got.Refunded, got.Status)
	}
	_, doc := a.op.get(t, second.Header.Get("Location"))
	if got := strings.Join(strings.Fields(doc.Find("#result").Text()), " "); !strings.Contains(got, "Already done") ||
		!strings.Contains(got, "Refunded 10.50 BRL") || !strings.Contains(got, "by olga") || !strings.Contains(got, "19.50 BRL left to refund") {
		t.Errorf("second submission: %q", got)
	}
	if n := doc.Find("table.refunds tbody tr").Length(); n != 1 {
		t.Errorf("%d refunds shown, want 1", n)
	}
}

// refusedByTheRules: what the rules refuse is shown, and nothing is done.
func (a *operatorActions) refusedByTheRules(refundKey string) {
	t := a.t
	_, doc := a.op.get(t, a.page)
	for _, tt := range []struct {
		action string
		form   url.Values
		status int
		says   string
	}{
		{"refund", url.Values{"amount": {"100"}, "idempotency_key": {formKey(doc, "refund")}}, http.StatusUnprocessableEntity, "cannot refund 100.00 BRL; 19.50 BRL is available"},
		{"refund", url.Values{"amount": {"ten"}, "idempotency_key": {"admin-bad-amount"}}, http.StatusBadRequest, "amount"},
		{"refund", url.Values{"amount": {""}, "idempotency_key": {"admin-no-amount"}}, http.StatusBadRequest, "enter the amount to refund"},
		{"refund", url.Values{"amount": {"1"}}, http.StatusBadRequest, "idempotencyKey"},
		{"cancel", url.Values{"idempotency_key": {"admin-late-cancel"}}, http.StatusConflict, "cannot cancel a payment that is PARTIALLY_REFUNDED"},
		{"refund", url.Values{"amount": {"2"}, "idempotency_key": {refundKey}}, http.StatusConflict, "already used for a different request"},
	} {
		res, doc := a.op.post(t, a.page+"/"+tt.action, tt.form)
		if msg := doc.Find("[role=alert]").Text(); res.StatusCode != tt.status || !strings.Contains(msg, tt.says) || !strings.Contains(msg, "Nothing was done") {
			t.Errorf("%s %v: %d %q; want %d saying %q", tt.action, tt.form, res.StatusCode, msg, tt.status, tt.says)
		}
	}
	if got := a.b.payment(t, a.id); got.Refunded.Minor != 1050 || got.Status != payments.StatusPartiallyRefunded {
		t.Errorf("refused actions changed the payment: %s, %s", got.Refunded, got.Status)
	}
	if res, _ := a.op.post(t, "/admin/payments/pay_nope/refund", url.Values{"amount": {"1"}, "idempotency_key": {"admin-x"}}); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown payment: %d", res.StatusCode)
	}
}

// TestAdminCrossSite: a state-changing request a browser says comes from
// another site is refused with 403 and does nothing, even with a valid
// session cookie; the same request from this site works.
func TestAdminCrossSite(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	op := b.addStaff(t, "olga", staff.Operator)
	p := b.newPayment(t, "shop", "order-1", "50", true)
	form := url.Values{"amount": {"5"}, "idempotency_key": {"admin-cross"}}.Encode()
	for name, h := range map[string]http.Header{
		"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
		"Sec-Fetch-Site same-site":  {"Sec-Fetch-Site": {"same-site"}, "Origin": {"http://127.0.0.1:1"}},
		"another Origin":            {"Origin": {"https://evil.example"}},
	} {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, path := range []string{"/admin/payments/" + p.ID + "/refund", "/admin/logout", "/admin/login"} {
			res, body := op.do(t, "POST", path, h, form)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "another site") {
				t.Errorf("%s %s: %d", name, path, res.StatusCode)
			}
		}
	}
	if b.payment(t, p.ID).Refunded.Minor != 0 {
		t.Fatal("a cross-site refund was applied")
	}
	if res, _ := op.get(t, "/admin"); res.StatusCode != http.StatusOK {
		t.Errorf("the session was ended by a cross-site sign-out: %d", res.StatusCode)
	}
	if res, _ := op.post(t, "/admin/payments/"+p.ID+"/refund", url.Values{"amount": {"5"}, "idempotency_key": {"admin-same"}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("same-site refund: %d", res.StatusCode)
	}
}

// TestAdminStaffAccounts: an admin adds a colleague with a temporary
// password shown once; the colleague must change it before anything else;
// disabling the account ends its session at once.
func TestAdminStaffAccounts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		adm := b.asAdmin(t)
		res, doc := adm.post(t, "/admin/staff", url.Values{"username": {"Vera"}, "role": {"operator"}})
		temporary := doc.Find("code.password").Text()
		if res.StatusCode != http.StatusOK || len(temporary) < 20 || strings.Contains(res.Request.URL.String(), temporary) {
			t.Fatalf("add: %d, password %q", res.StatusCode, temporary)
		}
		if _, doc := adm.get(t, "/admin/staff"); strings.Contains(doc.Text(), temporary) {
			t.Error("the temporary password is shown again")
		}
		if res, doc := adm.post(t, "/admin/staff", url.Values{"username": {"vera"}, "role": {"viewer"}}); res.StatusCode != http.StatusBadRequest ||
			!strings.Contains(doc.Find("[role=alert]").Text(), "already") {
			t.Errorf("a second vera: %d", res.StatusCode)
		}

		// First sign-in: the account page, and nothing else, until changed.
		vera := b.newClient(t)
		res, _ = vera.post(t, "/admin/login", url.Values{"username": {"vera"}, "password": {temporary}})
		if res.Header.Get("Location") != "/admin/account" {
			t.Fatalf("first sign-in went to %q", res.Header.Get("Location"))
		}
		for _, path := range []string{"/admin", "/admin/payments.csv"} {
			if res, _ := vera.get(t, path); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/account" {
				t.Errorf("%s with a temporary password: %d to %q", path, res.StatusCode, res.Header.Get("Location"))
			}
		}
		res, doc = vera.post(t, "/admin/account", url.Values{"current_password": {temporary}, "new_password": {"short"}, "confirm_password": {"short"}})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(doc.Find("[role=alert]").Text(), "at least 12") {
			t.Errorf("a short password: %d %q", res.StatusCode, doc.Find("[role=alert]").Text())
		}
		res, _ = vera.post(t, "/admin/account", url.Values{"current_password": {temporary}, "new_password": {"veras-own-password"}, "confirm_password": {"veras-own-password"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("change password: %d", res.StatusCode)
		}
		if res, _ := vera.get(t, "/admin"); res.StatusCode != http.StatusOK {
			t.Fatalf("after the change: %d", res.StatusCode)
		}

		// Role change: applies to the next request.
		if res, _ := adm.post(t, "/admin/staff/vera/role", url.Values{"role": {"admin"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("role: %d", res.StatusCode)
		}
		if res, _ := vera.get(t, "/admin/audit"); res.StatusCode != http.StatusOK {
			t.Errorf("vera as admin reads the audit log: %d", res.StatusCode)
		}
		// Nobody disables or demotes themselves.
		if res, _ := adm.post(t, "/admin/staff/admin/disable", nil); res.StatusCode != http.StatusBadRequest {
			t.Errorf("disabling oneself: %d", res.StatusCode)
		}
		// Disabling ends vera's session at once.
		if res, _ := adm.post(t, "/admin/staff/vera/disable", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("disable: %d", res.StatusCode)
		}
		if res, _ := vera.get(t, "/admin"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/admin/login") {
			t.Errorf("a disabled account's session: %d", res.StatusCode)
		}
		if res, _ := b.newClient(t).post(t, "/admin/login", url.Values{"username": {"vera"}, "password": {"veras-own-password"}}); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("a disabled account signs in: %d", res.StatusCode)
		}

		got := b.auditLines(t, "?action=staff.add")
		if len(got) != 3 || !strings.HasPrefix(got[0], "staff.add|admin|127.0.0.1|vera|failed|") || !strings.HasPrefix(got[1], "staff.add|admin|127.0.0.1|vera|ok|role operator") ||
			!strings.HasPrefix(got[2], "staff.add|(server start)||admin|ok|") {
			t.Errorf("staff.add entries:\n%s", strings.Join(got, "\n"))
		}
		for action, want := range map[string]string{
			"staff.role":      "staff.role|admin|127.0.0.1|vera|ok|from operator to admin",
			"staff.disable":   "staff.disable|admin|127.0.0.1|vera|ok|1 session(s) ended",
			"password.change": "password.change|vera|127.0.0.1|vera|ok|0 other session(s) ended",
		} {
			if got := b.auditLines(t, "?action="+action); len(got) == 0 || got[0] != want {
				t.Errorf("%s: %q, want %q first", action, got, want)
			}
		}
	})
}

// TestAdminCSV: the export of a filter has exactly its rows, every one of
// them (not a page), as RFC 4180 CSV with the header, quoting, and
// spreadsheet formulas neutralised; it is audited.
func TestAdminCSV(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for i := range 120 { // more than a list page
			b.newPayment(t, "bulk", fmt.Sprintf("bulk-%03d", i), "1", true)
		}
		weird := []string{`=HYPERLINK("http://evil.example","x")`, "+1+2", "-3", "@SUM(A1)", `a,"quoted" key`, "plain"}
		for _, key := range weird {
			b.newPayment(t, "shop,=1", key, "12.3", key != "plain")
		}
		p := b.newPayment(t, "shop,=1", "refunded", "10", true)
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, Amount: ptrTo("2.5"), IdempotencyKey: "r1"}); err != nil {
			t.Fatal(err)
		}

		// The list links to the export of its filter.
		adm := b.asAdmin(t)
		_, doc := adm.get(t, "/admin?client=shop%2C%3D1")
		href := doc.Find("a.export").AttrOr("href", "")
		if href != "/admin/payments.csv?client=shop%2C%3D1" {
			t.Fatalf("export link %q", href)
		}
		res, body := adm.do(t, "GET", href, nil, "")
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/csv; charset=utf-8; header=present" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment; filename=") {
			t.Fatalf("export: %d %v", res.StatusCode, res.Header)
		}
		if !strings.HasPrefix(string(body), "id,created_at,client_id,amount,currency,method,status,captured_amount,refunded_amount,idempotency_key,replay_count,rejected_count\r\n") ||
			strings.Count(string(body), "\r\n") != 8 {
			t.Fatalf("export body:\n%s", body)
		}
		records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range records[1:] {
			keys = append(keys, r[9])
			if r[2] != "shop,=1" || r[4] != "BRL" || r[5] != "PIX" {
				t.Errorf("row %q", r)
			}
		}
		want := []string{"refunded", "plain", `a,"quoted" key`, "'@SUM(A1)", "'-3", "'+1+2", `'=HYPERLINK("http://evil.example","x")`}
		if !slices.Equal(keys, want) {
			t.Errorf("keys, newest first:\n%q\nwant\n%q", keys, want)
		}
		if r := records[1]; r[0] != p.ID || r[3] != "10.00" || r[6] != "PARTIALLY_REFUNDED" || r[7] != "10.00" || r[8] != "2.50" || r[10] != "0" || r[11] != "0" ||
			!strings.HasSuffix(r[1], "Z") || r[1] != p.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z") {
			t.Errorf("refunded row %q", r)
		}
		if r := records[2]; r[6] != "AUTHORIZED" || r[7] != "0.00" {
			t.Errorf("authorized row %q", r)
		}

		// Every payment, not one page.
		_, body = adm.do(t, "GET", "/admin/payments.csv?client=bulk", nil, "")
		if n := strings.Count(string(body), "\r\n"); n != 121 {
			t.Errorf("bulk export: %d lines, want the header and 120 rows", n)
		}
		// A filter that is not one.
		if res, _ := adm.do(t, "GET", "/admin/payments.csv?from=yesterday", nil, ""); res.StatusCode != http.StatusBadRequest {
			t.Errorf("bad filter: %d", res.StatusCode)
		}

		got := b.auditLines(t, "?action=export")
		want = []string{
			"export|admin|127.0.0.1|/admin/payments.csv?from=yesterday|failed|from must be a date like 2026-12-31",
			"export|admin|127.0.0.1|/admin/payments.csv?client=bulk|ok|120 rows",
			"export|admin|127.0.0.1|/admin/payments.csv?client=bulk|started|",
			"export|admin|127.0.0.1|/admin/payments.csv?client=shop%2C%3D1|ok|7 rows",
			"export|admin|127.0.0.1|/admin/payments.csv?client=shop%2C%3D1|started|",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("export entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func ptrTo(s string) *string { return &s }

// flushRecorder records the body as it stood at each flush.
type flushRecorder struct {
	*httptest.ResponseRecorder
	atFlush []int
}

func (f *flushRecorder) Flush() {
	f.atFlush = append(f.atFlush, f.Body.Len())
	f.ResponseRecorder.Flush()
}

// TestAdminCSVStreams: a long export goes out while it is being read, a
// flush every thousand rows, rather than once at the end (and the handler
// holds one page of rows, whatever the total).
func TestAdminCSVStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.Postgres(t))
	if err := b.db.Gorm.Exec(`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, status, captured_minor)
		SELECT 'pay_stream_' || lpad(g::text, 6, '0'), 'stream', 'key-' || g, 100, 'BRL', 'PIX', now() - g * interval '1 second', 'CAPTURED', 100
		FROM generate_series(1, 3500) g`).Error; err != nil {
		t.Fatal(err)
	}
	c := b.asAdmin(t)
	u, _ := url.Parse(b.srv.URL + "/admin/payments.csv")
	req := httptest.NewRequest("GET", "/admin/payments.csv?client=stream", nil)
	for _, ck := range c.jar.Cookies(u) {
		req.AddCookie(ck)
	}
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	b.handler.ServeHTTP(rec, req)
	lines := 0
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		lines++
	}
	if rec.Code != http.StatusOK || lines != 3501 {
		t.Fatalf("%d, %d lines", rec.Code, lines)
	}
	if len(rec.atFlush) < 3 || rec.atFlush[0] == 0 || rec.atFlush[0] >= rec.atFlush[len(rec.atFlush)-1] {
		t.Errorf("flushes at body sizes %v: want the rows sent as they are read", rec.atFlush)
	}
}

// An admin makes a token on /admin/tokens, sees its secret once, the API
// takes it with its scopes and client; revoked, the API refuses it.
func TestAdminTokensPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		admin := b.asAdmin(t)
		res, doc := admin.post(t, "/admin/tokens", url.Values{"name": {"shop-7 checkout"}, "client": {"shop-7"},
			"scope": {"payments:read", "payments:write"}})
		secret := doc.Find("code.password").Text()
		if res.StatusCode != http.StatusOK || secret == "" {
			t.Fatalf("make a token: %d, secret %q", res.StatusCode, secret)
		}
		as := http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"application/json"}, "Idempotency-Key": {"tok-1"}}
		if res, body := b.raw(t, "POST", "/api/payments", as, `{"clientId":"shop-8","amount":"1","currency":"BRL","method":"PIX"}`); res.StatusCode != 403 {
			t.Errorf("the bound token for another client: %d %s, want 403", res.StatusCode, body)
		}
		if res, body := b.raw(t, "POST", "/api/payments", as, `{"clientId":"shop-7","amount":"1","currency":"BRL","method":"PIX"}`); res.StatusCode != 201 {
			t.Errorf("the token for its client: %d %s, want 201", res.StatusCode, body)
		}
		_, list := admin.get(t, "/admin/tokens")
		row := list.Find("table.tokens tbody tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.Contains(s.Text(), "shop-7 checkout")
		})
		if row.Length() != 1 || strings.Contains(list.Text(), secret) || !strings.Contains(row.Text(), "shop-7") {
			t.Fatalf("the list shows %q (the secret must not be there again)", row.Text())
		}
		action := row.Find("form").AttrOr("action", "")
		if res, _ := admin.post(t, action, nil); res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke: %d", res.StatusCode)
		}
		as.Set("Idempotency-Key", "tok-2")
		if res, _ := b.raw(t, "POST", "/api/payments", as, `{"clientId":"shop-7","amount":"1","currency":"BRL","method":"PIX"}`); res.StatusCode != 401 {
			t.Errorf("a revoked token: %d, want 401", res.StatusCode)
		}
		// Revoking it again, and an id that names no token, change nothing:
		// both are audited as failed.
		if res, _ := admin.post(t, action, nil); res.StatusCode != http.StatusOK && res.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke again: %d", res.StatusCode)
		}
		if res, _ := admin.post(t, "/admin/tokens/tok_nope/revoke", nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("revoke an unknown id: %d, want 404", res.StatusCode)
		}
		lines := strings.Join(b.auditLines(t, ""), "\n")
		for _, want := range []string{"token.create|admin", "token.revoke|admin", "|ok|", "|failed|already revoked", "tok_nope|failed|no such token"} {
			if !strings.Contains(lines, want) {
				t.Errorf("the audit log lacks %q:\n%s", want, lines)
			}
		}
	})
}

// endingRecorder ends the export's session at its first flush.
type endingRecorder struct {
	*httptest.ResponseRecorder
	end     func()
	flushes int
}

func (f *endingRecorder) Flush() {
	if f.flushes++; f.flushes == 1 {
		f.end()
	}
	f.ResponseRecorder.Flush()
}

// TestAdminCSVStopsWhenItsSessionEnds: an export whose session ends
// mid-stream (here: the account is disabled) stops at its next flush, as a
// broken download, and the audit log says why.
func TestAdminCSVStopsWhenItsSessionEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		ctx := context.Background()
		at := time.Now().UTC()
		rows := make([]models.Payment, 3500)
		for i := range rows {
			rows[i] = models.Payment{ID: fmt.Sprintf("pay_end_%06d", i), ClientID: "stream", IdempotencyKey: fmt.Sprint("key-", i),
				AmountMinor: 100, Currency: "BRL", Method: "PIX", CreatedAt: at.Add(-time.Duration(i) * time.Second),
				Status: "CAPTURED", CapturedMinor: 100}
		}
		if err := db.Gorm.CreateInBatches(rows, 500).Error; err != nil {
			t.Fatal(err)
		}
		c := b.addStaff(t, "carol", staff.Viewer)
		u, _ := url.Parse(b.srv.URL + "/admin/payments.csv")
		req := httptest.NewRequest("GET", "/admin/payments.csv?client=stream", nil)
		for _, ck := range c.jar.Cookies(u) {
			req.AddCookie(ck)
		}
		rec := &endingRecorder{ResponseRecorder: httptest.NewRecorder(), end: func() {
			if err := b.staff.Disable(ctx, staff.CommandLine, "carol"); err != nil {
				t.Error(err)
			}
		}}
		func() {
			defer func() {
				if p := recover(); p != nil && p != http.ErrAbortHandler {
					panic(p)
				}
			}()
			b.handler.ServeHTTP(rec, req)
		}()
		lines := strings.Count(rec.Body.String(), "\n")
		if lines >= 3501 || lines < 1000 {
			t.Errorf("%d lines sent; want the export stopped at its first flush after the session ended", lines)
		}
		page, err := b.staff.AuditLog(ctx, staff.AuditFilter{Action: staff.ActExport}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Entries) == 0 || !strings.Contains(page.Entries[0].Detail, "session ended") {
			t.Errorf("the export's last entry: %+v; want it stopped because the session ended", page.Entries)
		}
	})
}

// An action on a payment made at a processor this server is not set up
// for (a Stripe payment, on a sandbox server) says so, does nothing, and
// is audited as failed rather than shown as our own error.
func TestAdminActionOnAPaymentMadeElsewhere(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		op := b.addStaff(t, "otto", staff.Operator)
		p := b.newPayment(t, "shop-8", "order-8", "50", false)
		if err := b.db.Gorm.Exec(`UPDATE payments SET processor = 'stripe' WHERE id = ?`, p.ID).Error; err != nil {
			t.Fatal(err)
		}
		page := "/admin/payments/" + p.ID
		res, doc := op.post(t, page+"/capture", url.Values{"amount": {"50"}, "idempotency_key": {"admin-elsewhere"}})
		msg := doc.Find("[role=alert]").Text()
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg, "Nothing was done") ||
			!strings.Contains(msg, "made at stripe") || !strings.Contains(msg, "PROCESSOR=stripe") {
			t.Fatalf("capture of a Stripe payment on a sandbox server: %d %q", res.StatusCode, msg)
		}
		if got := b.payment(t, p.ID); got.Status != payments.StatusAuthorized || got.PendingOperation != "" {
			t.Errorf("the payment changed: %s pending %q", got.Status, got.PendingOperation)
		}
		if got := b.auditLines(t, "?actor=otto"); len(got) == 0 || !strings.HasPrefix(got[0], "capture|otto|") || !strings.Contains(got[0], "|failed|") {
			t.Errorf("audit %q, want the capture recorded as failed", got)
		}
	})
}
