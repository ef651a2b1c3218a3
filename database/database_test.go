package database_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

func TestOpenPicksTheDriver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, u := range []string{"sqlite:" + dir + "/a.db", "file:" + dir + "/b.db", "sqlite:" + dir + "/c.db?_pragma=busy_timeout(1)"} {
		db, err := database.Open(u, database.Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if db.Dialector.Name() != "sqlite" {
			t.Errorf("Open(%q) dialect %s", u, db.Dialector.Name())
		}
		if err := database.Ping(t.Context(), db); err != nil {
			t.Errorf("Open(%q) ping: %v", u, err)
		}
		database.Close(db)
	}
	for _, u := range []string{"mysql://x", "cmpay.db", "sqlite:", "redis://u:secret@h/0"} {
		_, err := database.Open(u, database.Options{})
		if err == nil {
			t.Errorf("Open(%q) succeeded, want an error", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %v", u, err)
		}
	}
}

// TestOpenDefault: an empty URL (DATABASE_URL unset) opens the documented
// default, the SQLite file cmpay.db in the working directory. Not
// parallel: it changes the working directory.
func TestOpenDefault(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	db, err := database.Open("", database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer database.Close(db)
	if err := database.Ping(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cmpay.db")); err != nil || db.Dialector.Name() != "sqlite" || database.DefaultURL != "sqlite:cmpay.db" {
		t.Errorf("Open(\"\"): %s database, cmpay.db in the working directory: %v; default %q", db.Dialector.Name(), err, database.DefaultURL)
	}
}

// The embedded default's settings are what its promises rest on: a commit
// the API acknowledged is on disk (synchronous FULL, 2), readers never wait
// for the writer (WAL), writers queue (busy timeout). A URL's own pragma
// wins over the default.
func TestSQLiteSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		url                    string
		synchronous, busyMilli int
	}{
		{url: "sqlite:" + dir + "/a.db", synchronous: 2, busyMilli: 10000},
		{url: "sqlite:" + dir + "/b.db?_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5)", synchronous: 1, busyMilli: 5},
	}
	for _, tt := range tests {
		db, err := database.Open(tt.url, database.Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", tt.url, err)
		}
		var synchronous, busy int
		var journal string
		if err := db.Raw("PRAGMA synchronous").Scan(&synchronous).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw("PRAGMA busy_timeout").Scan(&busy).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Raw("PRAGMA journal_mode").Scan(&journal).Error; err != nil {
			t.Fatal(err)
		}
		if synchronous != tt.synchronous || busy != tt.busyMilli || journal != "wal" {
			t.Errorf("%s: synchronous %d, busy_timeout %d, journal_mode %s; want %d, %d, wal",
				tt.url, synchronous, busy, journal, tt.synchronous, tt.busyMilli)
		}
		database.Close(db)
	}
}

// The composite unique index is what makes idempotency hold; it must exist,
// be unique and cover (client_id, idempotency_key) on both databases.
func TestMigrateCreatesTheUniqueIndex(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		if err := database.Migrate(db.Gorm); err != nil {
			t.Fatalf("second migration: %v", err)
		}
		var def string
		switch db.Dialect {
		case "postgres":
			db.Gorm.Raw(`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'idx_idempotency_keys_client_key'`).Scan(&def)
		case "sqlite":
			db.Gorm.Raw(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'idx_idempotency_keys_client_key'`).Scan(&def)
		}
		compact := strings.NewReplacer(`"`, "", "`", "", " ", "").Replace(def)
		if !strings.Contains(def, "UNIQUE") || !strings.Contains(compact, "(client_id,idempotency_key)") {
			t.Errorf("index definition %q, want UNIQUE on (client_id, idempotency_key)", def)
		}
		err := db.Gorm.Exec(`INSERT INTO idempotency_keys (client_id, idempotency_key, fingerprint, fingerprint_version, payment_id, created_at)
			VALUES ('c', 'k', 'x', 1, 'p1', CURRENT_TIMESTAMP), ('c', 'k', 'y', 1, 'p2', CURRENT_TIMESTAMP)`).Error
		if err == nil {
			t.Error("two rows with one (client, key) were accepted")
		}
	})
}

// Instances starting together all migrate; none fails.
func TestConcurrentMigrations(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		// A fresh, empty database of the same kind, opened by four "instances".
		fresh := dbtest.Empty(t, db.Dialect)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				conn, err := database.Open(fresh, database.Options{})
				if err != nil {
					errs <- err
					return
				}
				defer database.Close(conn)
				errs <- database.Migrate(conn)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}

// A database made by version 1 (before the payment lifecycle) upgrades in
// place: its tables gain the new columns, its payments read as captured
// when created, its attempts name their key, and the data migration runs
// once.
func TestMigrateUpgradesVersion1(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db, err := database.Open(dbtest.Empty(t, dialect), database.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { database.Close(db) })
			schema, err := os.ReadFile("testdata/schema_v1_" + dialect + ".sql")
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Exec(string(schema)).Error; err != nil {
				t.Fatalf("create the version 1 schema: %v", err)
			}
			created := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			mustExec(t, db, `INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, replay_count, rejected_count)
				VALUES ('pay_old', 'shop-7', 'order-1', 1050, 'BRL', 'PIX', ?, 1, 1)`, created)
			mustExec(t, db, `INSERT INTO idempotency_keys (client_id, idempotency_key, fingerprint, fingerprint_version, payment_id, created_at)
				VALUES ('shop-7', 'order-1', 'fp', 1, 'pay_old', ?)`, created)
			mustExec(t, db, `INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport)
				VALUES ('pay_old', 'CREATED', ?, '', NULL, NULL, NULL, 'graphql'), ('pay_old', 'REJECTED', ?, 'amount', 999, 'BRL', 'PIX', 'rest')`, created, created)

			for range 2 { // the second run finds nothing to do
				if err := database.Migrate(db); err != nil {
					t.Fatalf("migrate: %v", err)
				}
			}
			var p models.Payment
			if err := db.Raw(`SELECT * FROM payments WHERE id = 'pay_old'`).Scan(&p).Error; err != nil {
				t.Fatal(err)
			}
			if p.Status != "CAPTURED" || p.CapturedMinor != 1050 || p.RefundedMinor != 0 || p.CapturedAt == nil || !p.CapturedAt.Equal(created) {
				t.Errorf("old payment after the upgrade = %+v, want captured in full when created", p)
			}
			var keys []string
			db.Raw(`SELECT idempotency_key FROM idempotency_attempts ORDER BY id`).Scan(&keys)
			if !slices.Equal(keys, []string{"order-1", "order-1"}) {
				t.Errorf("attempts' keys = %v, want the payment's key on both", keys)
			}
			var op string
			db.Raw(`SELECT operation FROM idempotency_keys`).Scan(&op)
			if op != "CREATE_PAYMENT" {
				t.Errorf("old key's operation = %q, want CREATE_PAYMENT", op)
			}
			checkUpgraded(t, db, dialect)
			// The new check constraint holds on the upgraded table too.
			if err := db.Exec(`UPDATE payments SET refunded_minor = 2000 WHERE id = 'pay_old'`).Error; err == nil {
				t.Error("refunding more than was captured was accepted by the upgraded table")
			}
		})
	}
}

func mustExec(t *testing.T, db *gorm.DB, sql string, args ...any) {
	t.Helper()
	if err := db.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
