package database_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
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
