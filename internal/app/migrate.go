package app

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/models"
)

// Migration says what Migrate found and did.
type Migration struct {
	// Dialect is "postgres" or "sqlite".
	Dialect string
	// Tables lists every table the models declare; Created those of them
	// that were missing before.
	Tables, Created []string
	// Ran lists the numbered migrations run now, by version; Version is
	// the highest recorded after, the schema's version.
	Ran     []int
	Version int
}

// Migrate brings the schema of db up to date, as every start of the
// server does and `cmpay migrate` does alone (database.Migrate: the tables
// and indexes of the models, the currencies, the numbered migrations). It
// is safe to run at every start and from several instances at once. The
// Migration it returns says which tables were missing before and which
// numbered migrations ran, for `cmpay migrate` to print.
func Migrate(db *gorm.DB) (Migration, error) {
	m := Migration{Dialect: db.Dialector.Name()}
	present := map[string]bool{}
	for _, model := range models.All() {
		table, err := tableOf(db, model)
		if err != nil {
			return m, err
		}
		m.Tables = append(m.Tables, table)
		present[table] = db.Migrator().HasTable(table)
	}
	done, err := database.MigrateReport(context.Background(), db)
	if err != nil {
		return m, err
	}
	for _, table := range m.Tables {
		if !present[table] {
			m.Created = append(m.Created, table)
		}
	}
	m.Ran, m.Version = done.Ran, done.Version
	return m, nil
}

// tableOf is the table of a model.
func tableOf(db *gorm.DB, model any) (string, error) {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(model); err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	return stmt.Schema.Table, nil
}
