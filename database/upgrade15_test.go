package database_test

import (
	"testing"

	"gorm.io/gorm"
)

// A database migrated before the late check read twice has its partial
// index under the first name, with the first read's predicate: AutoMigrate
// adds the index under its new name and 0015 drops the old one, which
// would otherwise keep the old predicate (AutoMigrate never redefines an
// index that exists). checkUpgraded holds the result to a new database's.
func TestUpgradeFrom14RenamesTheLateCheckIndex(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		undo(t, db, 15,
			`DROP INDEX idx_processor_operations_late_reads`,
			`CREATE INDEX idx_processor_operations_late_check ON processor_operations (key_since)
			WHERE key_since IS NOT NULL AND late_checked_at IS NULL AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')`)
		if m := migrateReport(t, db); m.UpToDate || len(m.Ran) != 1 || m.Ran[0] != 15 {
			t.Fatalf("the upgrade from 14: %+v, want 0015 run", m)
		}
		for name, want := range map[string]bool{"idx_processor_operations_late_check": false, "idx_processor_operations_late_reads": true} {
			if got := db.Migrator().HasIndex("processor_operations", name); got != want {
				t.Errorf("after the upgrade, index %s exists: %v, want %v", name, got, want)
			}
		}
		checkUpgraded(t, db, dialect)
	})
}
