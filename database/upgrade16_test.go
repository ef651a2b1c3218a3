package database_test

import (
	"testing"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/models"
)

// A database left at version 15 has idx_processor_events_unapplied and not
// idx_processor_events_waiting: its first migration by this build builds
// the new index (AutoMigrate) and takes 0016, which drops the old one.
// checkUpgraded holds it to a new database's.
func TestUpgradeFrom15ReplacesTheUnappliedEventsIndex(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		undo(t, db, 16, `DROP INDEX idx_processor_events_waiting`,
			`CREATE INDEX idx_processor_events_unapplied ON processor_events (applied_at) WHERE applied_at IS NULL`)
		if m := migrateReport(t, db); m.UpToDate || len(m.Ran) != 1 || m.Ran[0] != 16 {
			t.Fatalf("the upgrade from 15: %+v, want 0016 run", m)
		}
		migrator := db.Migrator()
		if migrator.HasIndex(&models.ProcessorEvent{}, "idx_processor_events_unapplied") {
			t.Error("idx_processor_events_unapplied is still there")
		}
		if !migrator.HasIndex(&models.ProcessorEvent{}, "idx_processor_events_waiting") {
			t.Error("idx_processor_events_waiting was not built")
		}
		checkUpgraded(t, db, dialect)
	})
}
