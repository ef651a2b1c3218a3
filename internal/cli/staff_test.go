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
