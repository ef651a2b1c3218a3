package cli_test

import (
	"os"
	"testing"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMain fails the run if a command leaves a goroutine running (dbtest.Main
// checks with goleak).
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// openDB opens the database at url, closed when the test ends.
func openDB(t *testing.T, url string) *gorm.DB {
	t.Helper()
	db, err := database.Open(url, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(db) })
	return db
}
