package database_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// The models of TestBuildFingerprintFollowsTheModels: one table as a build
// declares it, then as builds that each change one thing about it.
type (
	widget struct {
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int64  `gorm:"not null"`
	}
	widgetType struct { // Amount is an int32
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int32  `gorm:"not null"`
	}
	widgetNullable struct { // Amount may be NULL
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int64
	}
	widgetDefault struct { // State's default is another
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'OPEN';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int64  `gorm:"not null"`
	}
	widgetKeyOrder struct { // the composite unique index's fields swapped
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int64  `gorm:"not null"`
	}
	widgetPartial struct { // the partial index's predicate narrower
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW'"`
		Amount int64  `gorm:"not null"`
	}
	widgetIndexed struct { // Amount indexed
		ID     string `gorm:"primaryKey;size:40"`
		Client string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:1"`
		Key    string `gorm:"not null;size:100;uniqueIndex:idx_widgets_client_key,priority:2"`
		State  string `gorm:"not null;size:20;default:'NEW';index:idx_widgets_open,where:state = 'NEW' OR state = 'HELD'"`
		Amount int64  `gorm:"not null;index"`
	}
)

func (widget) TableName() string         { return "widgets" }
func (widgetType) TableName() string     { return "widgets" }
func (widgetNullable) TableName() string { return "widgets" }
func (widgetDefault) TableName() string  { return "widgets" }
func (widgetKeyOrder) TableName() string { return "widgets" }
func (widgetPartial) TableName() string  { return "widgets" }
func (widgetIndexed) TableName() string  { return "widgets" }

// TestBuildFingerprintFollowsTheModels: the fingerprint a migration
// records is the same for the same models, and differs when one model
// changes one column's type, nullability or default, or an index (the
// composite unique one's order, a partial one's predicate, a new one): a
// build with a changed model never finds the schema up to date.
func TestBuildFingerprintFollowsTheModels(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		fingerprint := func(m any) string {
			t.Helper()
			fp, tables, err := database.BuildFingerprint(db.Gorm, db.Dialect, []any{&models.Payment{}, m})
			if err != nil {
				t.Fatal(err)
			}
			if len(tables) != 2 || tables[1] != "widgets" {
				t.Fatalf("tables %v, want payments and widgets", tables)
			}
			return fp
		}
		base := fingerprint(&widget{})
		if again := fingerprint(&widget{}); again != base {
			t.Fatalf("the same models give two fingerprints: %s, %s", base, again)
		}
		seen := map[string]string{base: "widget"}
		for name, m := range map[string]any{
			"type": &widgetType{}, "nullable": &widgetNullable{}, "default": &widgetDefault{},
			"key order": &widgetKeyOrder{}, "partial": &widgetPartial{}, "indexed": &widgetIndexed{},
		} {
			fp := fingerprint(m)
			if other, dup := seen[fp]; dup {
				t.Errorf("%s: the fingerprint of %s", name, other)
			}
			seen[fp] = name
		}
		other := "sqlite"
		if db.Dialect == "sqlite" {
			other = "postgres"
		}
		if fp, _, _ := database.BuildFingerprint(db.Gorm, other, []any{&models.Payment{}, &widget{}}); fp == base {
			t.Error("both dialects have one fingerprint")
		}
	})
}

// migrateReport migrates db and fails the test on an error.
func migrateReport(t *testing.T, db *gorm.DB) database.Migrated {
	t.Helper()
	m, err := database.MigrateReport(context.Background(), db)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return m
}

// TestMigrateSkipsWhenUpToDate: a migration after a complete one by the
// same build finds the schema up to date and runs nothing, saying the
// tables and version as a complete one does; the first one, on a new
// database, runs everything.
func TestMigrateSkipsWhenUpToDate(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := openEmpty(t, dialect)
			first := migrateReport(t, db)
			if first.UpToDate || len(first.Created) != len(models.All()) {
				t.Fatalf("a new database: up to date %t, created %d tables, want false and %d", first.UpToDate, len(first.Created), len(models.All()))
			}
			again := migrateReport(t, db)
			if !again.UpToDate || len(again.Ran) != 0 || len(again.Created) != 0 || len(again.Tables) != len(first.Tables) ||
				again.Version != database.LatestVersion() {
				t.Errorf("again: %+v, want up to date at version %d, %d tables", again, database.LatestVersion(), len(first.Tables))
			}
		})
	}
}

// TestMigrateRunsWhenAnythingChanged: a migration runs whole, and then
// records its own state, after another build migrated (its fingerprint
// recorded), after a change by hand to what the models declare (an index
// dropped, as a build from before schema_state or an operator could, which
// the migration makes again), after a numbered migration was forgotten,
// and after the currencies changed.
func TestMigrateRunsWhenAnythingChanged(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]string{
		"another build":   `UPDATE schema_state SET build = 'another build'`,
		"an index gone":   `DROP INDEX idx_idempotency_keys_client_key`,
		"a version gone":  `DELETE FROM schema_versions WHERE version = 13`,
		"a currency gone": `DELETE FROM currencies WHERE code = 'BRL'`,
		"a column added":  `ALTER TABLE payments ADD COLUMN by_hand INTEGER`,
	} {
		for _, dialect := range dbtest.Dialects {
			t.Run(name+"/"+dialect, func(t *testing.T) {
				t.Parallel()
				db := openEmpty(t, dialect)
				migrateReport(t, db)
				mustExec(t, db, change)
				if m := migrateReport(t, db); m.UpToDate {
					t.Fatalf("after %s: up to date", name)
				}
				if !db.Migrator().HasIndex(&models.IdempotencyKey{}, "idx_idempotency_keys_client_key") {
					t.Error("the composite unique index is not there again")
				}
				var n int64
				db.Raw(`SELECT count(*) FROM currencies WHERE code = 'BRL'`).Scan(&n)
				if n != 1 {
					t.Error("BRL is not among the currencies again")
				}
				if m := migrateReport(t, db); !m.UpToDate {
					t.Errorf("the migration after the one that ran whole: not up to date")
				}
			})
		}
	}
}

// openEmpty opens an empty database of the dialect, not migrated.
func openEmpty(t *testing.T, dialect string) *gorm.DB {
	t.Helper()
	db, err := database.Open(dbtest.Empty(t, dialect), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(db) })
	return db
}

// TestMigrateFindsACopyUpToDate: a database copied from one migrated by
// this build (the test helpers restore a dump into a schema of another
// name, or copy a SQLite file) is up to date, so that a server started on
// it skips the migration too.
func TestMigrateFindsACopyUpToDate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		if m := migrateReport(t, db.Gorm); !m.UpToDate {
			t.Errorf("a copy of a migrated database: %+v, want up to date", m)
		}
	})
}

// TestCatalogCoversColumnComments: a column's comment, which GORM's
// AutoMigrate sets from a model's comment tag and the build fingerprint
// holds, is in the catalog's digest, so that one changed by hand makes the
// next start migrate, and set it back, as a start before schema_state did.
// PostgreSQL's alone: SQLite keeps a column's comment in its table's
// CREATE statement, which the digest holds whole.
func TestCatalogCoversColumnComments(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	digest := func() string {
		t.Helper()
		d, err := database.SchemaCatalog(db.Gorm, db.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := digest()
	mustExec(t, db.Gorm, `COMMENT ON COLUMN payments.status IS 'set by hand'`)
	if digest() == before {
		t.Error("a column's comment changed and the catalog's digest did not")
	}
}
