package cli_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// TestMigrateCommand: `cmpay migrate` on an empty database creates every
// table and runs the numbered migrations, saying so; run again, it finds
// the schema as this build leaves it and says there was nothing to do.
// Either way the schema is the server's: the staff audit log is
// append-only (its trigger is a numbered migration).
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
				!strings.Contains(out, "nothing to do") || !strings.Contains(out, "No numbered migration to run.") ||
				!strings.Contains(out, latest) {
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

// TestMigrateCommandsAtOnce: of two `cmpay migrate` on one new PostgreSQL
// database at once, the advisory lock lets one create the tables and run
// the numbered migrations; the other then finds nothing to do, and says
// so rather than claiming to have created them too. The test holds the
// lock until both wait for it, so that neither can finish before the
// other starts.
func TestMigrateCommandsAtOnce(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(dbtest.Empty(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	app := "migrate_" + q.Get("search_path") // names this test's connections
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := dbtest.Connect(t, u.String())
	held := db.Begin()
	if err := held.Exec(`SELECT pg_advisory_xact_lock(x'636d706179'::bigint)`).Error; err != nil { // database.migrationLocks
		t.Fatal(err)
	}
	type result struct {
		code     int
		out, err string
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			code, out, errOut := cmd(t, u.String(), "migrate")
			results <- result{code, out, errOut}
		}()
	}
	waitForLockWaiters(t, db, app, 2) // not in held: a transaction sees pg_stat_activity as it first read it
	if err := held.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	var created, nothing int
	for range 2 {
		r := <-results
		switch {
		case r.code != 0:
			t.Errorf("migrate: exit %d\n%s%s", r.code, r.out, r.err)
		case strings.Contains(r.out, "Created all ") && strings.Contains(r.out, "Ran numbered migrations "):
			created++
		case strings.Contains(r.out, " tables were there") && strings.Contains(r.out, "nothing to do") &&
			strings.Contains(r.out, "No numbered migration to run."):
			nothing++
		default:
			t.Errorf("migrate said neither that it created the tables nor that they were there:\n%s", r.out)
		}
	}
	if created != 1 || nothing != 1 {
		t.Errorf("%d runs created the tables and %d found them there; want 1 and 1", created, nothing)
	}
}

// waitForLockWaiters waits until n connections named app wait for a lock.
func waitForLockWaiters(t *testing.T, db *gorm.DB, app string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		err := db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'`, app).
			Scan(&waiting).Error
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d migrations wait for the lock after 10 s", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
