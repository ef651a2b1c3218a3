package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// PostgreSQL refuses a NUL byte, or bytes that are not UTF-8, in text
// (SQLSTATE 22021) where SQLite finds nothing. Such bytes in a username
// are an unknown user, in an id a thing that does not exist, in a filter
// or a name bad input: never a 500, on either database.

// TestUnstorableUsernamesAreWrongCredentials: the open sign-in form and
// HTTP Basic on /metrics answer a username holding a NUL, or bytes that
// are not UTF-8, as wrong credentials, counted (and, past the budget,
// answered 429) as such; the attempt is audited with those bytes replaced.
func TestUnstorableUsernamesAreWrongCredentials(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db, func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 3 })
		for _, user := range []string{"ad\x00min", "ad\xffmin"} {
			if rec := formSignIn(b.handler, "203.0.113.7", user, "guess"); rec.Code != http.StatusUnauthorized {
				t.Errorf("sign-in form as %q: %d, want 401", user, rec.Code)
			}
			if rec := signIn(b.handler, "/metrics", "203.0.113.8", "Basic "+basic(user, "guess")); rec.Code != http.StatusUnauthorized {
				t.Errorf("HTTP Basic as %q: %d, want 401", user, rec.Code)
			}
		}
		// Counted as failures for that username: the third from the
		// address spends its budget, the fourth is refused unchecked.
		for range 2 {
			formSignIn(b.handler, "203.0.113.7", "ad\x00min", "guess")
		}
		if rec := formSignIn(b.handler, "203.0.113.7", "ad\x00min", "guess"); rec.Code != http.StatusTooManyRequests {
			t.Errorf("a fourth sign-in as %q from one address: %d, want 429", "ad\x00min", rec.Code)
		}

		entries, err := b.staff.AuditLog(context.Background(), staff.AuditFilter{Action: staff.ActSignIn}, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, e := range entries.Entries {
			targets = append(targets, e.Target)
		}
		if !strings.Contains(strings.Join(targets, "|"), "ad\uFFFDmin") {
			t.Errorf("audited sign-ins name %q; want the typed username with U+FFFD for its bad bytes", targets)
		}
	})
}

// TestUnstorableIDsAreNotFound: deleting a webhook endpoint whose id holds
// a NUL deletes nothing (false), as for any id never issued.
func TestUnstorableIDsAreNotFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setupEvents(t, db)
		for _, id := range []string{"we_\x00", "we_\xff"} {
			res := b.gql(t, `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) }`, map[string]any{"id": id})
			if len(res.Errors) > 0 || string(res.Data["deleteWebhookEndpoint"]) != "false" {
				t.Errorf("deleteWebhookEndpoint(%q): %s %+v, want false", id, res.Data["deleteWebhookEndpoint"], res.Errors)
			}
		}
	})
}

// TestUnstorableAdminInput: the admin's filters and forms answer a NUL in
// a filter or a name as bad input (400), in an id as not found (404).
func TestUnstorableAdminInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		c := b.asAdmin(t)
		for _, tt := range []struct {
			method, path string
			form         url.Values
			want         int
		}{
			{"GET", "/admin/audit?actor=%00", nil, http.StatusBadRequest},
			{"GET", "/admin/audit?action=%00", nil, http.StatusBadRequest},
			{"POST", "/admin/staff", url.Values{"username": {"ev\x00il"}, "role": {"viewer"}}, http.StatusBadRequest},
			{"POST", "/admin/staff/ad%00min/role", url.Values{"role": {"viewer"}}, http.StatusNotFound},
			{"POST", "/admin/staff/ad%00min/disable", url.Values{}, http.StatusNotFound},
			{"POST", "/admin/tokens", url.Values{"name": {"n\x00"}, "client": {""}, "scope": {"payments:read"}}, http.StatusBadRequest},
			{"POST", "/admin/tokens", url.Values{"name": {"n"}, "client": {"c\x00"}, "scope": {"payments:read"}}, http.StatusBadRequest},
			{"POST", "/admin/tokens/tok_%00/revoke", url.Values{}, http.StatusNotFound},
			{"POST", "/admin/payments/pay_%00/refund", url.Values{"amount": {"1"}, "idempotency_key": {"k"}}, http.StatusNotFound},
		} {
			var res *http.Response
			if tt.method == "GET" {
				res, _ = c.get(t, tt.path)
			} else {
				res, _ = c.post(t, tt.path, tt.form)
			}
			if res.StatusCode != tt.want {
				t.Errorf("%s %s %v: %d, want %d", tt.method, tt.path, tt.form, res.StatusCode, tt.want)
			}
		}
		// What was tried is in the audit log, its NUL replaced.
		entries, err := b.staff.AuditLog(context.Background(), staff.AuditFilter{}, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(entries.Entries)
		if !strings.Contains(string(raw), "pay_\uFFFD") {
			t.Errorf("the refused refund's audit entry does not name pay_\uFFFD: %s", raw)
		}
	})
}
