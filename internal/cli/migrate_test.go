package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// TestMigrateCommand: `cmpay migrate` on an empty database creates every
// table and runs the numbered migrations, saying so; run again, it finds
// everything there and says that instead. Either way the schema is the
// server's: the staff audit log is append-only (its trigger is a numbered migration).
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			url := dbtest.Empty(t, dialect)
			latest := fmt.Sprintf("Schema version %d.", database.LatestVersion())
			code, out, errOut := cmd(t, url, "migrate")
			tables := len(models.All())
			if code != 0 || !strings.Contains(out, "Migrated the ") || !strings.Contains(out, "Created all ") ||
				!strings.Contains(out, "payments, ") || !strings.Contains(out, "Ran numbered migrations 2 ") ||
				!strings.Contains(out, latest) {
				t.Fatalf("migrate on an empty database: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = cmd(t, url, "migrate")
			if code != 0 || !strings.Contains(out, "All ") || !strings.Contains(out, " tables were there") ||
				!strings.Contains(out, "No numbered migration to run.") || !strings.Contains(out, latest) {
				t.Fatalf("migrate again: exit %d\n%s%s", code, out, errOut)
			}
			db := dbtest.Connect(t, url)
			for _, model := range models.All() {
				if !db.Migrator().HasTable(model) {
					t.Errorf("no table for %T after migrate (%d models)", model, tables)
				}
			}
			st := staff.New(db, staff.Config{})
			if err := st.Record(t.Context(), staff.CommandLine, staff.ActTokenRevoke, "tok_x", staff.OutcomeFailed, "test"); err != nil {
				t.Fatal(err)
			}
			if err := db.Exec(`DELETE FROM staff_audit`).Error; err == nil {
				t.Error("the staff audit log can be deleted from: its migration did not run")
			}
		})
	}
}

func TestMigrateCommandRefusesArguments(t *testing.T) {
	t.Parallel()
	url := dbtest.Empty(t, "sqlite")
	if code, out, errOut := cmd(t, url, "migrate", "now"); code != 2 || out != "" || !strings.Contains(errOut, "Usage: cmpay migrate") {
		t.Errorf("migrate now: exit %d, stdout %q, stderr %q; want 2 and the usage", code, out, errOut)
	}
	if code, out, _ := cmd(t, url, "migrate", "--help"); code != 2 || !strings.Contains(out, "Usage: cmpay migrate") {
		t.Errorf("migrate --help: exit %d, %q", code, out)
	}
}
