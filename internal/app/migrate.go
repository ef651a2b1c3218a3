package app

import (
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// Migration says what Migrate found and did.
type Migration struct {
	// Dialect is "postgres" or "sqlite".
	Dialect string
	// Tables lists every table the models declare; Created those of them
	// that were missing before.
	Tables, Created []string
	// Ran lists the data migrations run now, by version; Version is the
	// highest recorded after, the schema's version.
	Ran     []int
	Version int
}

// Migrate brings the schema of db up to date, as every start of the
// server does and `cmpay migrate` does alone: the tables and indexes of
// the models, the currencies and the data migrations (database.Migrate),
// then what the staff tables add (staff.Migrate). It is safe to run at
// every start and from several instances at once. The Migration it
// returns compares the schema before and after, for `cmpay migrate` to
// print.
func Migrate(db *gorm.DB) (Migration, error) {
	m := Migration{Dialect: db.Dialector.Name()}
	present := map[string]bool{}
	versions := ""
	for _, model := range models.All() {
		table, err := tableOf(db, model)
		if err != nil {
			return m, err
		}
		if _, ok := model.(*models.SchemaVersion); ok {
			versions = table
		}
		m.Tables = append(m.Tables, table)
		present[table] = db.Migrator().HasTable(table)
	}
	var before []int
	if present[versions] {
		if err := db.Model(&models.SchemaVersion{}).Pluck("version", &before).Error; err != nil {
			return m, fmt.Errorf("migrate: read schema versions: %w", err)
		}
	}
	if err := database.Migrate(db); err != nil {
		return m, err
	}
	if err := staff.Migrate(db); err != nil {
		return m, err
	}
	for _, table := range m.Tables {
		if !present[table] {
			m.Created = append(m.Created, table)
		}
	}
	var after []int
	if err := db.Model(&models.SchemaVersion{}).Pluck("version", &after).Error; err != nil {
		return m, fmt.Errorf("migrate: read schema versions: %w", err)
	}
	for _, v := range after {
		if !slices.Contains(before, v) {
			m.Ran = append(m.Ran, v)
		}
		m.Version = max(m.Version, v)
	}
	slices.Sort(m.Ran)
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
