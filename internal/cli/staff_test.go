package cli_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// TestStaffCommand runs "cmpay staff add|list|disable" against each
// database, as an operator at a shell would, and checks that the accounts
// it makes sign in as promised.
func TestStaffCommand(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			url := dbtest.Empty(t, dialect) // the first command migrates, as the server does
			migrated := false               // then the others need not (cmdMigrated)
			run := func(args ...string) (string, error) {
				run := cmd
				if migrated {
					run = cmdMigrated
				}
				code, out, errOut := run(t, url, append([]string{"staff"}, args...)...)
				migrated = migrated || code == 0
				if code != 0 {
					return out, fmt.Errorf("exit %d: %s", code, errOut)
				}
				return out, nil
			}

			out, err := run("add", "Alice", "--role", "operator")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			temporary := lines[len(lines)-1]
			if err != nil || !strings.Contains(out, "Added alice (operator)") || len(temporary) < 20 || strings.Contains(temporary, " ") {
				t.Fatalf("add without a password: %v\n%s", err, out)
			}
			if out, err := run("add", "--role=admin", "bob", "--password", "bobs-long-password"); err != nil || !strings.Contains(out, "with the password given") {
				t.Fatalf("add with a password: %v\n%s", err, out)
			}
			for _, bad := range [][]string{
				{"add", "carol", "--role", "root"},
				{"add", "--role", "viewer"},
				{"add", "dave", "--role", "viewer", "--password", "short"},
				{"add", "alice", "--role", "viewer"},
				{"disable", "nobody"},
				{"list", "extra"},
				{"remove", "alice"},
				{"add", "eve", "--role", "viewer", "--bogus"},
			} {
				if _, err := run(bad...); err == nil {
					t.Errorf("%q: no error", bad)
				}
			}
			out, err = run("list")
			if err != nil || !strings.Contains(out, "USERNAME") || !regexpLine(out, "alice", "operator", "temporary password", "never") ||
				!regexpLine(out, "bob", "admin", "active", "never") {
				t.Errorf("list: %v\n%s", err, out)
			}
			if out, err := run("disable", "ALICE"); err != nil || !strings.Contains(out, "Disabled alice") {
				t.Errorf("disable: %v %s", err, out)
			}
			if out, _ := run("list"); !regexpLine(out, "alice", "operator", "disabled") {
				t.Errorf("list after disable:\n%s", out)
			}

			// What was made signs in as promised.
			db := dbtest.Connect(t, url)
			st := staff.New(db, staff.Config{})
			if _, acct, err := st.SignIn(t.Context(), staff.SignInRequest{Username: "bob", Password: "bobs-long-password"}); err != nil || acct.MustChangePassword || acct.Role != staff.Admin {
				t.Errorf("bob: %+v %v", acct, err)
			}
			if _, _, err := st.SignIn(t.Context(), staff.SignInRequest{Username: "alice", Password: temporary}); !errors.Is(err, staff.ErrBadCredentials) {
				t.Errorf("disabled alice signs in: %v", err)
			}
			page, err := st.AuditLog(t.Context(), staff.AuditFilter{Actor: "(command line)"}, 10, "")
			if err != nil || len(page.Entries) != 3 {
				t.Errorf("command-line audit entries: %+v %v", page.Entries, err)
			}
		})
	}
}

// regexpLine reports whether some line of out holds all the words, in order.
func regexpLine(out string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := line, true
		for _, w := range words {
			i := strings.Index(rest, w)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(w):]
		}
		if ok {
			return true
		}
	}
	return false
}

// A wrong staff command line exits 2 with the reason and the usage on
// stderr, as tokens' does (cli.Run's promise), so that a script can tell
// "typed it wrong" from "it failed"; a refused value exits 1, as tokens'
// unknown scope does.
func TestStaffWrongCommandLineExitsTwo(t *testing.T) {
	t.Parallel()
	url := dbtest.SQLite(t).URL
	for _, tt := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"staff", "add"}, 2, "add takes 1 argument(s), got 0"},
		{[]string{"staff", "add", "bob", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"staff", "frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"staff", "add", "bob"}, 2, "add needs --role"},
		{[]string{"staff", "list", "extra"}, 2, "list takes 0 argument(s)"},
		{[]string{"staff", "disable", "bob", "--role", "admin"}, 2, "go with add only"},
		{[]string{"staff", "add", "bob", "--role", "admin", "--password", "x", "--password-stdin"}, 2, "give one of them"},
		{[]string{"staff", "add", "bob", "--role", "root"}, 1, "role"},
		{[]string{"staff", "disable", "nobody"}, 1, `no staff account "nobody"`},
	} {
		code, out, errOut := cmdMigrated(t, url, tt.args...) // dbtest.SQLite migrated it
		if code != tt.code || !strings.Contains(errOut, tt.inStderr) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tt.args, code, out, errOut, tt.code, tt.inStderr)
		}
		if code == 2 && !strings.Contains(errOut, "Usage:\n  cmpay staff add USERNAME") {
			t.Errorf("%q: no usage on stderr: %q", tt.args, errOut)
		}
	}
	for _, args := range [][]string{{"staff", "add", "-h"}, {"staff", "-h"}, {"staff", "--help"}, {"staff", "help"}} {
		if code, out, _ := cmdMigrated(t, url, args...); code != 2 || !strings.Contains(out, "--password-stdin") {
			t.Errorf("%q: exit %d, stdout %q; want 2 and the usage", args, code, out)
		}
	}
	if code, out, errOut := cmdMigrated(t, url, "staff"); code != 2 || out != "" || !strings.Contains(errOut, "Usage:") {
		t.Errorf("staff alone: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, out, errOut)
	}
}

// --password-stdin sets the first line of standard input as the password,
// so that it never shows in the process list or the shell's history.
func TestStaffAddPasswordFromStdin(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	code, out, errOut := runCLIInput(t, db.URL, true, "a long passphrase from stdin\nnot this line\n",
		"staff", "add", "bob", "--role", "viewer", "--password-stdin")
	if code != 0 || !strings.Contains(out, "Added bob (viewer) with the password given.") {
		t.Fatalf("add --password-stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	st := staff.New(dbtest.Connect(t, db.URL), staff.Config{})
	if _, acct, err := st.SignIn(t.Context(), staff.SignInRequest{Username: "bob", Password: "a long passphrase from stdin"}); err != nil || acct.MustChangePassword {
		t.Errorf("bob signs in with the password from stdin: %+v %v", acct, err)
	}
	// An empty first line sets nothing.
	code, _, errOut = runCLIInput(t, db.URL, true, "\n", "staff", "add", "carol", "--role", "viewer", "--password-stdin")
	if code != 1 || !strings.Contains(errOut, "no password") {
		t.Errorf("empty stdin: exit %d, stderr %q; want 1 and why", code, errOut)
	}
	if _, out, _ := cmdMigrated(t, db.URL, "staff", "list"); strings.Contains(out, "carol") {
		t.Errorf("carol was added from an empty stdin:\n%s", out)
	}
}
