package database_test

import (
	"testing"

	"gorm.io/gorm"
)

// A database left at version 12 has no schema_state: its first migration
// by this build runs whole (AutoMigrate included), takes 0013, which makes
// the table, and records its state there, so that the next start finds the
// schema up to date; checkUpgraded holds it to a new database's.
func TestUpgradeFrom12RecordsSchemaState(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		undo(t, db, 13, `DROP TABLE schema_state`)
		if m := migrateReport(t, db); m.UpToDate || len(m.Ran) != 1 || m.Ran[0] != 13 {
			t.Fatalf("the upgrade from 12: %+v, want 0013 run", m)
		}
		var rows int64
		db.Raw(`SELECT count(*) FROM schema_state`).Scan(&rows)
		if rows != 1 {
			t.Errorf("schema_state holds %d rows after the upgrade, want 1", rows)
		}
		checkUpgraded(t, db, dialect)
	})
}
