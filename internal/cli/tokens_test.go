package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/cli"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// cmd runs the binary's command line in this process against databaseURL,
// which the command migrates first, as the binary's does.
func cmd(t *testing.T, databaseURL string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, databaseURL, false, args...)
}

// cmdMigrated runs a command as cmd does, on a database an earlier command
// (or dbtest) has migrated: it skips the migration (cli.Env.Migrated),
// which would find nothing to do and cost about a second on PostgreSQL.
func cmdMigrated(t *testing.T, databaseURL string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, databaseURL, true, args...)
}

func runCLI(t *testing.T, databaseURL string, migrated bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIInput(t, databaseURL, migrated, "", args...)
}

// runCLIInput runs a command as runCLI does, with stdin as its standard
// input.
func runCLIInput(t *testing.T, databaseURL string, migrated bool, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{
		Getenv: func(k string) string {
			if k == "DATABASE_URL" {
				return databaseURL
			}
			return ""
		},
		Stdin:  strings.NewReader(stdin),
		Stdout: &out, Stderr: &errOut,
		Migrated: migrated,
	}
	code = cli.Run(context.Background(), args, env)
	return code, out.String(), errOut.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestTokensCommand(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		code, out, errOut := cmd(t, db.URL, "tokens", "create", "--name", "shop-7 checkout", "--client", "shop-7", "--scopes", "payments:read,metrics:read")
		if code != 0 {
			t.Fatalf("create: exit %d, %s", code, errOut)
		}
		secret := lastLine(out)
		if !strings.HasPrefix(secret, apitoken.Prefix) || strings.ContainsAny(secret, " \t") {
			t.Fatalf("the last line of stdout is %q, want the token alone:\n%s", secret, out)
		}
		store := apitoken.NewStore(db.Gorm, apitoken.Options{CacheTTL: -1})
		t.Cleanup(store.Close)
		p, ok, err := store.Authenticate(ctx, secret)
		if err != nil || !ok || p.ClientID != "shop-7" || auth.JoinScopes(p.Scopes) != "payments:read,metrics:read" {
			t.Fatalf("the printed token: %+v, %v, %v", p, ok, err)
		}

		// Without --scopes: payments:read and payments:write; unbound.
		code, out, _ = cmdMigrated(t, db.URL, "tokens", "create", "--name", "ci")
		if code != 0 {
			t.Fatalf("create with defaults: exit %d", code)
		}
		p, ok, _ = store.Authenticate(ctx, lastLine(out))
		if !ok || p.Bound() || auth.JoinScopes(p.Scopes) != "payments:read,payments:write" {
			t.Errorf("a token made with the defaults: %+v", p)
		}

		code, list, _ := cmdMigrated(t, db.URL, "tokens", "list")
		if code != 0 || !strings.Contains(list, p.ID) || !strings.Contains(list, "shop-7 checkout") ||
			!strings.Contains(list, "payments:read,metrics:read") || !strings.Contains(list, "LAST USED") {
			t.Errorf("list: exit %d\n%s", code, list)
		}
		if strings.Contains(list, secret) || strings.Contains(list, secret[len(apitoken.Prefix):len(apitoken.Prefix)+10]) {
			t.Errorf("the list shows a token:\n%s", list)
		}

		code, out, _ = cmdMigrated(t, db.URL, "tokens", "revoke", p.ID)
		if code != 0 || !strings.Contains(out, "Revoked "+p.ID) {
			t.Errorf("revoke: exit %d, %s", code, out)
		}
		if _, ok, _ := store.Authenticate(ctx, secret); !ok {
			t.Error("revoking one token revoked another")
		}
		_, list, _ = cmdMigrated(t, db.URL, "tokens", "list")
		for _, line := range strings.Split(list, "\n") {
			if strings.HasPrefix(line, p.ID) && strings.HasSuffix(strings.TrimSpace(line), " -") {
				t.Errorf("the revoked token is not shown revoked: %s", line)
			}
		}

		// Revoking again changes nothing, and an unknown id nothing either:
		// both are recorded as failed.
		if code, _, errOut := cmdMigrated(t, db.URL, "tokens", "revoke", p.ID); code != 0 {
			t.Errorf("revoke again: exit %d, %s", code, errOut)
		}
		if code, _, _ := cmdMigrated(t, db.URL, "tokens", "revoke", "tok_nope"); code != 1 {
			t.Errorf("revoke an unknown id: exit %d, want 1", code)
		}

		// Each change is in the audit log, by the command line, written
		// in the change's own transaction (apitoken.Audit).
		var entries []models.StaffAuditEntry
		if err := db.Gorm.Where("actor = ?", staff.CommandLine.Username).Order("id").Find(&entries).Error; err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Action+" "+e.Target+" "+e.Outcome)
		}
		first, _, _ := store.Authenticate(ctx, secret)
		want := []string{"token.create " + first.ID + " ok", "token.create " + p.ID + " ok", "token.revoke " + p.ID + " ok",
			"token.revoke " + p.ID + " failed", "token.revoke tok_nope failed"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("the audit log has\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestTokensCommandRefusesBadLines(t *testing.T) {
	t.Parallel()
	url := dbtest.SQLite(t).URL
	tests := []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"tokens"}, 2, "Usage"},
		{[]string{"tokens", "create"}, 2, "--name NAME"},
		{[]string{"tokens", "create", "--name", "x", "--scopes", "payments:admin"}, 1, `unknown scope "payments:admin"`},
		{[]string{"tokens", "create", "--name", "x", "--client", "bad\u202eclient"}, 1, "invisible"},
		{[]string{"tokens", "create", "--name", "x", "extra"}, 2, "Usage"},
		{[]string{"tokens", "revoke"}, 2, "Usage"},
		{[]string{"tokens", "revoke", "tok_nope"}, 1, "no such token"},
		{[]string{"tokens", "rotate"}, 2, "Usage"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
	}
	for _, tt := range tests {
		code, out, errOut := cmdMigrated(t, url, tt.args...) // dbtest.SQLite migrated it
		if code != tt.code || !strings.Contains(errOut, tt.inStderr) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.args, code, out, errOut, tt.code, tt.inStderr)
		}
	}
	if code, out, _ := cmd(t, url, "help"); code != 0 || !strings.Contains(out, "cmpay tokens") {
		t.Errorf("help: exit %d, %s", code, out)
	}
}
