package dbtest

import (
	"context"
	"sync"
	"testing"
)

// HoldLock runs query in a transaction of a connection pool of its own
// (another server's) and leaves it open until release, or the test's
// end: the locks it takes are held meanwhile, on PostgreSQL those of the
// rows it writes, on SQLite the database's write lock. For tests of what
// a write waiting for a lock, or giving up, does to the rest.
func HoldLock(t testing.TB, db DB, query string, args ...any) (release func()) {
	t.Helper()
	other, err := Connect(t, db.URL).DB()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := other.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(query, args...); err != nil {
		_ = tx.Rollback()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback() }) }
	t.Cleanup(release)
	return release
}
