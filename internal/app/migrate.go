package app

import (
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/staff"
)

// Migrate brings the schema of db up to date, as every start of the
// server does: the tables and indexes of the models, the currencies and
// the data migrations (database.Migrate), then what the staff tables add
// (staff.Migrate). It is safe to run at every start and from several
// instances at once.
func Migrate(db *gorm.DB) error {
	if err := database.Migrate(db); err != nil {
		return err
	}
	return staff.Migrate(db)
}
