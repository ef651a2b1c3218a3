package database_test

import (
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// A database left at version 13 has no processor_duplicates: its first
// migration by this build creates the table (AutoMigrate) and takes 0014,
// whose triggers keep a found duplicate as it was found: inserted, never
// updated or deleted. checkUpgraded holds it to a new database's.
func TestUpgradeFrom13KeepsDuplicatesAppendOnly(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		undo(t, db, 14, `DROP TABLE processor_duplicates`)
		if db.Migrator().HasTable("processor_duplicates") {
			t.Fatal("version 13 still has processor_duplicates: the setup did not drop it")
		}
		if m := migrateReport(t, db); m.UpToDate || len(m.Ran) != 1 || m.Ran[0] != 14 {
			t.Fatalf("the upgrade from 13: %+v, want 0014 run", m)
		}
		mustExec(t, db, `INSERT INTO processor_duplicates (reference, processor, payment_id, operation, amount_minor,
			currency, state, found_by, found_at) VALUES ('pi_2', 'stripe', 'pay_1', 'CREATE_PAYMENT', 10000, 'BRL',
			'captured', 'event', ?)`, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
		for _, stmt := range []string{
			`UPDATE processor_duplicates SET state = 'canceled'`,
			`DELETE FROM processor_duplicates`,
		} {
			if err := db.Exec(stmt).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want refused", stmt, err)
			}
		}
		if dialect == "postgres" {
			if err := db.Exec(`TRUNCATE processor_duplicates`).Error; err == nil {
				t.Error("TRUNCATE allowed while it holds a duplicate")
			}
		}
		checkUpgraded(t, db, dialect)
	})
}
