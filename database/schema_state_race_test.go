package database_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMigrateSeesWhatTheMigrationItWaitedForLeft: a start that waits for
// another build's migration reads, once it has the lock, what that one
// committed, even where the database's transactions default to repeatable
// read: it must not skip on the record it could see before it waited.
func TestMigrateSeesWhatTheMigrationItWaitedForLeft(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t) // migrated by this build, so up to date
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	const app = "cmpay_migrate_waits" // this test's alone
	q := u.Query()
	q.Set("default_transaction_isolation", "repeatable read")
	q.Set("application_name", app)
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads no "+" as a space
	waiting := dbtest.Connect(t, u.String())

	// The other build's migration: under the lock, it records its own state.
	other, err := dbtest.Connect(t, db.URL).DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := other.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range []string{`SELECT pg_advisory_xact_lock(x'636d706179'::bigint)`, `UPDATE schema_state SET build = 'another build'`} {
		if _, err := tx.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	done := make(chan database.Migrated, 1)
	failed := make(chan error, 1)
	go func() {
		m, err := database.MigrateReport(context.Background(), waiting)
		if err != nil {
			failed <- err
			return
		}
		done <- m
	}()
	// Commit once the start waits for the lock, its transaction begun.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := db.Gorm.Raw(`SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event = 'advisory'`, app).
			Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the start never waited for the migration's lock")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		t.Fatalf("migrate: %v", err)
	case m := <-done:
		if m.UpToDate {
			t.Fatal("the start skipped on the state it saw before the other build's migration committed")
		}
	}
	var build string
	db.Gorm.Raw(`SELECT build FROM schema_state`).Scan(&build)
	if build == "another build" {
		t.Error("the other build's record is left: the start did not record its own")
	}
}

// TestMigrateOnSQLiteTakesTheWriteLockFirst: on SQLite the migration
// begins with the write lock even where the URL asks for deferred
// transactions, so that a start never judges the schema up to date while
// another process's migration is under way: it waits, or here, with no
// busy timeout, fails.
func TestMigrateOnSQLiteTakesTheWriteLockFirst(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t) // migrated by this build, so up to date
	dbtest.HoldLock(t, db, `UPDATE schema_state SET build = 'another build'`)
	start := dbtest.Connect(t, db.URL+"&_txlock=deferred&_pragma=busy_timeout(0)")
	m, err := database.MigrateReport(context.Background(), start)
	if err == nil && m.UpToDate {
		t.Fatal("the start skipped on the state it read while another migration held the write lock")
	}
}
