package httpapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestNoticesNameOnlyRealObjects: the admin pages' "done" notices come from
// the URL their action redirects to; a crafted link's text is not shown
// as a trusted notice (content spoofing), while a real account or revoked
// token is.
func TestNoticesNameOnlyRealObjects(t *testing.T) {
	t.Parallel()
	const lie = "Your account is suspended: call +1 555 0100"
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		c := b.asAdmin(t)
		tok, _, err := b.tokens.Create(t.Context(), "notice", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		live, _, err := b.tokens.Create(t.Context(), "live", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.tokens.Revoke(t.Context(), tok.ID, nil); err != nil {
			t.Fatal(err)
		}
		q := url.QueryEscape(lie)
		for _, path := range []string{
			"/admin/webhooks?resent=" + q, "/admin/webhooks?unchanged=" + q,
			"/admin/webhooks?resent=987654", "/admin/webhooks?unchanged=987654",
			"/admin/staff?changed=" + q, "/admin/staff?changed=nobody",
			"/admin/tokens?revoked=" + q, "/admin/tokens?revoked=" + live.ID,
		} {
			_, doc := c.get(t, path)
			if got := strings.TrimSpace(doc.Find(`[role="status"]`).Text()); got != "" {
				t.Errorf("GET %s shows the notice %q", path, got)
			}
		}
		for path, want := range map[string]string{
			"/admin/staff?changed=admin":      "admin was changed.",
			"/admin/staff?changed=ADMIN":      "admin was changed.",
			"/admin/tokens?revoked=" + tok.ID: tok.ID + " was revoked.",
		} {
			_, doc := c.get(t, path)
			if got := strings.TrimSpace(doc.Find(`[role="status"]`).Text()); got != want {
				t.Errorf("GET %s shows the notice %q, want %q", path, got, want)
			}
		}
	})
}
