package app

import (
	"context"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// Migration says what Migrate found and did: the database's dialect, and
// the tables created and numbered migrations run, as database.Migrated
// says them.
type Migration struct {
	// Dialect is "postgres" or "sqlite".
	Dialect string
	database.Migrated
}

// Migrate brings the schema of db up to date, as every start of the
// server does and `cmpay migrate` does alone (database.Migrate: the tables
// and indexes of the models, the currencies, the numbered migrations). It
// is safe to run at every start and from several instances at once. The
// Migration it returns says which tables and numbered migrations this run
// created and ran, as found under the migration's lock, for `cmpay
// migrate` to print: of several runs at once, one creates the tables and
// the others find nothing to do.
func Migrate(db *gorm.DB) (Migration, error) {
	m := Migration{Dialect: db.Dialector.Name()}
	done, err := database.MigrateReport(context.Background(), db)
	if err != nil {
		return m, err
	}
	m.Migrated = done
	return m, nil
}
