package database

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/iso4217"
)

// A start that finds the schema exactly as this build's migration would
// leave it skips the migration's work: AutoMigrate alone reads every table,
// column and index again, most of a start's time on a database already
// migrated. Exactly as it would leave it means two things recorded by the
// last complete migration (schema_state, migration 0013) equal this
// start's:
//
//   - build: a fingerprint of what this build migrates with, per dialect:
//     its models as GORM parses them (tables; columns with their Go types,
//     tags and SQL types, defaults and nullability; indexes, partial and
//     composite ones with their fields in order; checks; foreign keys), its
//     numbered migrations, its currencies, the source of the code that
//     migrates (migrationCode), and the versions of GORM and its drivers,
//     which decide what AutoMigrate makes of all that. A build with one
//     model changed, or one that migrates another way, records another
//     fingerprint.
//   - catalog: a digest of the catalog that migration left (columns,
//     indexes, constraints, triggers, functions, table settings), with the
//     versions in schema_versions and the currencies. A build from before
//     schema_state, whose AutoMigrate may alter what it knows, or a change
//     by hand, or a version undone, changes it.
//
// Either differing, the migration runs whole and records both anew. The
// check is read under the migration's lock, like everything else, so a
// start waits for a migration under way and then sees what it left.

// migrationCode is the source of the code that migrates and judges the
// schema, and of its statements: a build that adds a step to the
// migration, or writes the currencies otherwise, with the same models and
// migrations, is another build. Editing these files costs the next start
// on each database one whole migration, as every start was before.
//
//go:embed database.go migrate.go schema_state.go sql/*.sql
var migrationCode embed.FS

// stateFormat changes whenever what the fingerprints cover changes, so
// that no build matches a record hashed another way.
const stateFormat = "cmpay schema state 1"

// migrationModules decide what AutoMigrate makes of the models: GORM, its
// drivers, and SQLite itself, which go-sqlite3 runs from a module of its
// own (go-sqlite3-wasm) that go.mod may move alone.
var migrationModules = []string{"gorm.io/gorm", "gorm.io/driver/postgres", "github.com/ncruces/go-sqlite3",
	"github.com/ncruces/go-sqlite3/gormlite", "github.com/ncruces/go-sqlite3-wasm/v6"}

// moduleVersions are the versions of migrationModules this binary was
// built with ("" for one it lacks, or when it carries no build
// information).
var moduleVersions = sync.OnceValue(func() []string {
	info, _ := debug.ReadBuildInfo()
	out := make([]string, len(migrationModules))
	if info == nil {
		return out
	}
	for _, dep := range info.Deps {
		if i := slices.Index(migrationModules, dep.Path); i >= 0 {
			out[i] = dep.Version
			if dep.Replace != nil {
				out[i] += " => " + dep.Replace.Path + " " + dep.Replace.Version
			}
		}
	}
	return out
})

// buildFingerprint hashes what this build's migration makes of a database
// of the dialect, from models (models.All(), but for tests); it returns
// the models' tables too, in order.
func buildFingerprint(tx *gorm.DB, dialect string, models []any) (string, []string, error) {
	h := sha256.New()
	line := func(format string, args ...any) { fmt.Fprintf(h, format+"\n", args...) }
	line("%s %s", stateFormat, dialect)
	for i, m := range migrationModules {
		line("module %s %s", m, moduleVersions()[i])
	}
	var tables []string
	for _, model := range models {
		table, err := fingerprintModel(tx, model, line)
		if err != nil {
			return "", nil, err
		}
		tables = append(tables, table)
	}
	for _, m := range migrations {
		sum := sha256.Sum256([]byte(strings.Join(m.sql[dialect], "\n")))
		line("migration %d %s %x go=%t", m.version, m.name, sum, m.run != nil)
	}
	if err := fs.WalkDir(migrationCode, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := migrationCode.ReadFile(path)
		line("code %s %x", path, sha256.Sum256(src))
		return err
	}); err != nil {
		return "", nil, fmt.Errorf("hash the migration's code: %w", err)
	}
	digits := iso4217.All()
	for _, code := range slices.Sorted(maps.Keys(digits)) {
		line("currency %s %d", code, digits[code])
	}
	return hex.EncodeToString(h.Sum(nil)), tables, nil
}

// fingerprintModel writes one model's lines, as GORM parses it for tx's
// dialect, and returns its table.
func fingerprintModel(tx *gorm.DB, model any, line func(string, ...any)) (string, error) {
	stmt := &gorm.Statement{DB: tx}
	if err := stmt.Parse(model); err != nil {
		return "", fmt.Errorf("parse the model %T: %w", model, err)
	}
	s := stmt.Schema
	line("table %s", s.Table)
	for _, f := range s.Fields {
		if f.DBName == "" || f.IgnoreMigration {
			continue
		}
		typ := tx.Migrator().FullDataTypeOf(f)
		line("column %s %s %q %q %v pk=%t auto=%t unique=%t size=%d precision=%d scale=%d comment=%q",
			f.DBName, f.FieldType, f.Tag.Get("gorm"), typ.SQL, typ.Vars, f.PrimaryKey, f.AutoIncrement, f.Unique,
			f.Size, f.Precision, f.Scale, f.Comment)
	}
	indexes := s.ParseIndexes()
	sort.Slice(indexes, func(i, j int) bool { return indexes[i].Name < indexes[j].Name })
	for _, idx := range indexes {
		line("index %s class=%q type=%q where=%q option=%q comment=%q", idx.Name, idx.Class, idx.Type, idx.Where, idx.Option, idx.Comment)
		for _, f := range idx.Fields {
			name := ""
			if f.Field != nil {
				name = f.DBName
			}
			line("\tfield %s expression=%q sort=%q collate=%q length=%d", name, f.Expression, f.Sort, f.Collate, f.Length)
		}
	}
	checks := s.ParseCheckConstraints()
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		line("check %s %q", name, checks[name].Constraint)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Relationships.Relations)) {
		if c := s.Relationships.Relations[name].ParseConstraint(); c != nil {
			line("foreign key %s %s on delete %q on update %q", c.Name, c.Field.Name, c.OnDelete, c.OnUpdate)
		}
	}
	return s.Table, nil
}

// catalogSQL is each dialect's catalog statement (sql/postgres.sql,
// sql/sqlite.sql).
var catalogSQL = map[string]string{"postgres": postgresSQL.SQL("catalog"), "sqlite": sqliteSQL.SQL("catalog")}

// schemaCatalog hashes tx's catalog as the dialect's catalog statement
// lists it, in a stable order.
func schemaCatalog(tx *gorm.DB, dialect string) (string, error) {
	rows, err := tx.Raw(catalogSQL[dialect]).Rows()
	if err != nil {
		return "", fmt.Errorf("read the catalog: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", fmt.Errorf("read the catalog: %w", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read the catalog: %w", err)
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// schemaState is what the last complete migration recorded.
type schemaState struct {
	Build, Catalog string
	Version        int
}

// upToDate says whether tx's database is as a migration by the build
// fingerprinted build leaves it, and if so the schema's version.
func upToDate(tx *gorm.DB, build, dialect string) (bool, int, error) {
	if !tx.Migrator().HasTable("schema_state") {
		return false, 0, nil // a new database, or one from before migration 0013
	}
	var rec schemaState
	res := tx.Raw(sharedSQL.SQL("schema_state_read")).Scan(&rec)
	if res.Error != nil {
		return false, 0, fmt.Errorf("read the schema state: %w", res.Error)
	}
	if res.RowsAffected == 0 || rec.Build != build {
		return false, 0, nil
	}
	catalog, err := schemaCatalog(tx, dialect)
	if err != nil {
		return false, 0, err
	}
	return catalog == rec.Catalog, rec.Version, nil
}

// recordState records, at the end of a complete migration, the build that
// ran it and the catalog it leaves.
func recordState(tx *gorm.DB, build, dialect string, version int) error {
	catalog, err := schemaCatalog(tx, dialect)
	if err != nil {
		return err
	}
	if err := tx.Exec(sharedSQL.SQL("schema_state_write"), build, catalog, version).Error; err != nil {
		return fmt.Errorf("record the schema state: %w", err)
	}
	return nil
}
