// Package dbtest gives each test a fresh, migrated database of its own:
// a new schema on the PostgreSQL server named by CMPAY_TEST_DATABASE_URL, or
// a new SQLite file. Tests about storage run the same code on both.
package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// EnvURL names the PostgreSQL server tests use; its user must be allowed to
// create schemas. ./scripts/test.sh starts a throwaway server and sets it.
const EnvURL = "CMPAY_TEST_DATABASE_URL"

// DB is a test's own database.
type DB struct {
	Gorm *gorm.DB
	// Dialect is "postgres" or "sqlite".
	Dialect string
	// URL is a DATABASE_URL that reaches this same database, for starting
	// server processes on it.
	URL string
}

var quiet = slog.New(slog.DiscardHandler)

// Dialects lists what ForEach runs on.
var Dialects = []string{"postgres", "sqlite"}

// ForEach runs fn once per dialect, as parallel subtests named after it.
func ForEach(t *testing.T, fn func(t *testing.T, db DB)) {
	t.Helper()
	for _, dialect := range Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, dialect))
		})
	}
}

// Open returns a fresh migrated database of the dialect, dropped when the
// test ends.
func Open(t testing.TB, dialect string) DB {
	t.Helper()
	switch dialect {
	case "postgres":
		return Postgres(t)
	case "sqlite":
		return SQLite(t)
	}
	t.Fatalf("dbtest: unknown dialect %q", dialect)
	return DB{}
}

// ServerURL returns the PostgreSQL server's URL, failing the test with
// instructions when it is not set: a storage test that silently did not run
// would prove nothing.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Fatalf("%s is not set: start a throwaway PostgreSQL with ./scripts/dev-postgres.sh in another terminal "+
			"and run the export line it prints (CMPAY_TEST_DATABASE_URL and CMPAY_PG_BIN), or point it at a server "+
			"whose user may create schemas (./scripts/test.sh starts one by itself)", EnvURL)
	}
	return u
}

var (
	adminOnce sync.Once
	admin     *gorm.DB
	adminErr  error
)

// Postgres returns a fresh schema on the test server, with search_path set
// to it, migrated: made from the dump of a schema migrated once per test
// binary (see migratedPostgres), or migrated where pg_dump is missing.
func Postgres(t testing.TB) DB {
	t.Helper()
	adminDB(t) // the connection the template's statements run on (execScript)
	tmpl, err := migratedPostgres(ServerURL(t))
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	if tmpl.dump == "" {
		u := emptyPostgres(t)
		return DB{Gorm: openMigrated(t, u), Dialect: "postgres", URL: u}
	}
	u := newSchema(t, func(schema string) error {
		return execScript(strings.ReplaceAll(tmpl.dump, tmpl.schema, schema))
	})
	return DB{Gorm: Connect(t, u), Dialect: "postgres", URL: u}
}

// Empty returns the DATABASE_URL of a fresh database of the dialect with
// nothing in it, not even tables; it is dropped when the test ends.
func Empty(t testing.TB, dialect string) string {
	t.Helper()
	if dialect == "postgres" {
		return emptyPostgres(t)
	}
	return "sqlite:" + filepath.Join(t.TempDir(), "empty.db") + sqliteSettings
}

// sqliteSettings is the query of every test SQLite URL: commits are not
// synced to disk (synchronous=OFF), as test clusters run with fsync=off
// (cluster.go). The faults under test are processes dying, not the
// machine, and what a dead process wrote is in the OS's page cache; with
// the server's synchronous=FULL, a create waited for its own fsync, which
// on this shared disk made SQLite tests several times slower.
const sqliteSettings = "?_pragma=synchronous(OFF)"

// emptyPostgres creates a schema on the test server and returns a URL whose
// search_path is that schema.
func emptyPostgres(t testing.TB) string {
	t.Helper()
	return newSchema(t, func(schema string) error {
		return adminDB(t).Exec(`CREATE SCHEMA ` + schema).Error
	})
}

// adminDB is the connection to the test server shared by a package's
// tests, for creating and dropping their schemas.
func adminDB(t testing.TB) *gorm.DB {
	t.Helper()
	serverURL := ServerURL(t)
	adminOnce.Do(func() {
		admin, adminErr = database.Open(serverURL, database.Options{MaxOpenConns: 4, Logger: quiet})
	})
	if adminErr != nil {
		t.Fatalf("dbtest: connect to %s: %v", EnvURL, adminErr)
	}
	return admin
}

// newSchema has create make a schema of a new name on the test server,
// drops it when the test ends, and returns a URL whose search_path is it.
func newSchema(t testing.TB, create func(schema string) error) string {
	t.Helper()
	serverURL := ServerURL(t)
	db := adminDB(t)
	schema := "test_" + randomHex(8)
	if err := create(schema); err != nil {
		t.Fatalf("dbtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := dropSchema(db, schema); err != nil {
			t.Errorf("dbtest: drop schema %s: %v", schema, err)
		}
	})
	u, err := withSearchPath(serverURL, schema)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return u
}

// dropSchema drops schema and everything in it. A server process the test
// stopped may leave a backend finishing its last statement in the schema,
// whose locks the drop, taking the schema's objects one by one, can
// deadlock with; PostgreSQL then cancels one of the two. The drop is then
// tried again after a pause growing by 100 ms each time, five tries in
// all: long enough, in practice, for that backend to be gone; nothing
// here waits for it.
func dropSchema(db *gorm.DB, schema string) error {
	var err error
	for try := range 5 {
		if err = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`).Error; err == nil || !isDeadlock(err) {
			return err
		}
		time.Sleep(time.Duration(try+1) * 100 * time.Millisecond) // a retry's back-off
	}
	return err
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// withSearchPath is serverURL with its search_path set to schema.
func withSearchPath(serverURL, schema string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// SQLite returns a fresh migrated SQLite file in the test's temporary
// directory: a copy of one migrated once per test binary (see
// migratedSQLite).
func SQLite(t testing.TB) DB {
	t.Helper()
	template, err := migratedSQLite()
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cmpay.db")
	if err := copyFile(template, path); err != nil {
		t.Fatalf("dbtest: copy the migrated SQLite file: %v", err)
	}
	u := "sqlite:" + path + sqliteSettings
	return DB{Gorm: Connect(t, u), Dialect: "sqlite", URL: u}
}

func openMigrated(t testing.TB, u string) *gorm.DB {
	t.Helper()
	db := Connect(t, u)
	if err := database.Migrate(db); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return db
}

// Connect opens the database at u as it is, without migrating it (one a
// server process or a command has made), and closes it when the test
// ends.
func Connect(t testing.TB, u string) *gorm.DB {
	t.Helper()
	// Tests provoke database errors on purpose and check them themselves.
	// The pool is the one the server gets, but for PostgreSQL's size.
	opts := database.Options{Logger: quiet}
	if strings.HasPrefix(u, "postgres") {
		opts.MaxOpenConns = 16
	}
	db, err := database.Open(u, opts)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() { _ = database.Close(db) })
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}
