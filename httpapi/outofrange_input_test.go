package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// A forged cursor or date whose time no database holds alike (PostgreSQL
// refuses 290309 BC with SQLSTATE 22008; SQLite compares year 10000 as
// text, before every row) is bad input on every surface, never a 500.

// TestForgedCursorTimesAreBadInput: a cursor holding such a time is
// BAD_USER_INPUT on GraphQL and 400 on the admin list and audit pages.
func TestForgedCursorTimesAreBadInput(t *testing.T) {
	t.Parallel()
	cursor := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, raw := range []string{"v1:-9223372036854775808:pay_x", "v1:253402300800000000:pay_x"} {
			res := b.gql(t, `query($after: String) { payments(first: 2, after: $after) { pageInfo { hasNextPage } } }`,
				map[string]any{"after": cursor(raw)})
			if res.code() != "BAD_USER_INPUT" {
				t.Errorf("payments(after %q): %+v, want BAD_USER_INPUT", raw, res.Errors)
			}
		}
		c := b.asAdmin(t)
		for _, path := range []string{
			"/admin?after=" + cursor("v1:-9223372036854775808:pay_x"),
			"/admin/audit?after=" + cursor("a1:-9223372036854775808:s:1"),
		} {
			if res, _ := c.get(t, path); res.StatusCode != http.StatusBadRequest {
				t.Errorf("GET %s: %d, want 400", path, res.StatusCode)
			}
		}
	})
}

// TestFarDateFiltersAreBadInput: a "to" day of 9999-12-31 ends the range
// at 10000-01-01; the admin list, its CSV export and the audit page refuse
// it with the form's error (400), where SQLite listed nothing.
func TestFarDateFiltersAreBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		c := b.asAdmin(t)
		for _, path := range []string{
			"/admin?to=9999-12-31", "/admin/payments.csv?to=9999-12-31", "/admin/audit?to=9999-12-31",
			"/admin?from=0000-12-31", "/admin/audit?from=0000-12-31",
		} {
			if res, _ := c.get(t, path); res.StatusCode != http.StatusBadRequest {
				t.Errorf("GET %s: %d, want 400", path, res.StatusCode)
			}
		}
		for _, path := range []string{"/admin?to=9999-12-30", "/admin/payments.csv?to=9999-12-30", "/admin/audit?to=9999-12-30"} {
			if res, _ := c.get(t, path); res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", path, res.StatusCode)
			}
		}
	})
}
