package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// `cmpay tokens create --scopes payments:create` makes the token a
// checkout page may hold; the list and the usage show the scope.
func TestTokensCreateScope(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		code, out, errOut := cmd(t, db.URL, "tokens", "create", "--name", "shop-7 page", "--client", "shop-7", "--scopes", "payments:create")
		if code != 0 || !strings.Contains(out, "with the scopes payments:create") {
			t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
		}
		store := apitoken.NewStore(db.Gorm, apitoken.Options{CacheTTL: -1})
		t.Cleanup(store.Close)
		p, ok, err := store.Authenticate(context.Background(), lastLine(out))
		if err != nil || !ok || p.ClientID != "shop-7" || auth.JoinScopes(p.Scopes) != "payments:create" {
			t.Fatalf("the printed token: %+v, %v, %v", p, ok, err)
		}
		code, list, _ := cmdMigrated(t, db.URL, "tokens", "list")
		if code != 0 || !strings.Contains(list, "shop-7 page") || !strings.Contains(list, "payments:create") {
			t.Errorf("list: exit %d\n%s", code, list)
		}
		if _, _, usage := cmdMigrated(t, db.URL, "tokens"); !strings.Contains(usage, "payments:create") {
			t.Errorf("the usage does not list payments:create:\n%s", usage)
		}
	})
}
