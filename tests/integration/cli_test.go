package integration_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// The binary's own command line, on the database a running server uses:
// the token it prints works there, within its scopes.
func TestTokensCommandWithTheServer(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	code, out, errOut := runBinary(t, db.URL, "tokens", "create", "--name", "reader", "--scopes", "payments:read")
	if code != 0 {
		t.Fatalf("cmpay tokens create: exit %d\n%s", code, errOut)
	}
	token := lastLine(out)
	srv := startServer(t, db.URL)
	call := func(method, path, body string) int {
		req, _ := http.NewRequest(method, srv.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "cli-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := call("GET", "/api/payments/pay_missing", ""); got != http.StatusNotFound {
		t.Errorf("reading with the new token: %d, want 404", got)
	}
	if got := call("POST", "/api/payments", `{"clientId":"c","amount":"1","currency":"BRL","method":"PIX"}`); got != http.StatusForbidden {
		t.Errorf("writing with a payments:read token: %d, want 403", got)
	}
}

// TestStaffCommandDispatch: the binary runs "staff" instead of serving,
// and fails with the usage on a mistake.
func TestStaffCommandDispatch(t *testing.T) {
	t.Parallel()
	url := dbtest.Empty(t, "sqlite")
	code, out, errOut := runBinary(t, url, "staff", "add", "zoe", "--role", "viewer")
	if code != 0 || !strings.Contains(out, "Added zoe (viewer)") {
		t.Fatalf("cmpay staff add: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runBinary(t, url, "staff", "add", "zoe")
	if code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("a mistake: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMigrateCommand: `cmpay migrate` migrates an empty database on each
// dialect, says so and exits 0 without serving; a server then starts on it.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			url := dbtest.Empty(t, dialect)
			code, out, errOut := runBinary(t, url, "migrate")
			if code != 0 || !strings.Contains(out, "Created all ") || !strings.Contains(out, "Schema version ") ||
				strings.Contains(out, "CMPay listening") {
				t.Fatalf("cmpay migrate: exit %d\n%s%s", code, out, errOut)
			}
			srv := startServer(t, url)
			if _, err := post(srv.url, createBody("after-migrate")); err != nil {
				t.Errorf("a create on the migrated database: %v", err)
			}
		})
	}
}
