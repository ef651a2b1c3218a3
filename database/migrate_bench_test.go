package database_test

import (
	"testing"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// BenchmarkMigrateUpToDate is a start's migration on a database this
// build has migrated already (docs/benchmarks/2026-12-07-restart-migrate.md).
// "whole" makes each run find another build's record first, so that it
// does all a migration does (AutoMigrate, the currencies, the numbered
// migrations, recording its state), as every start did before the check.
func BenchmarkMigrateUpToDate(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, whole := range []bool{false, true} {
			name := dialect + "/skip"
			if whole {
				name = dialect + "/whole"
			}
			b.Run(name, func(b *testing.B) {
				db, err := database.Open(dbtest.Empty(b, dialect), database.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { database.Close(db) })
				if err := database.Migrate(db); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if whole {
						if err := db.Exec(`UPDATE schema_state SET build = 'another build'`).Error; err != nil {
							b.Fatal(err)
						}
					}
					if err := database.Migrate(db); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
