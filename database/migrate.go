package database

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/models"
)

// The schema has one migration path. GORM's AutoMigrate creates what the
// models declare (tables, columns, indexes, the composite unique index);
// everything it cannot express (triggers, dropped or renamed indexes,
// table settings, data moves) is a numbered migration in migrations/:
//
//	0003_drop_counter_indexes.sql   run on both databases
//	0006_staff_audit.postgres.sql   run on PostgreSQL only (and likewise .sqlite)
//	0007_admin_attempts_append_only.postgres.sql, .sqlite.sql: one per database
//	0008 client_id_nfc               written in Go (goMigrations)
//
// A version may have a file for each database, or one for both. A
// statement ends with a semicolon at the end of a line, outside a $$ body.
// Each version runs once, after AutoMigrate, and is recorded in
// schema_versions; a version without a file for a database is recorded
// there too, so that the recorded versions say how far the schema is.
// Versions are never renumbered or edited once released: a change is a new
// version.
//
// Why not a migration library: goose, the one on the module proxy, runs
// each migration in a transaction of its own and has no lock for SQLite,
// while CMPay runs AutoMigrate and the numbered migrations as one unit
// under one lock on both databases, so that instances starting together
// never interleave. What that takes is the loop below.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered version, with what it runs on each database.
type migration struct {
	version int
	name    string
	// sql maps a dialect ("postgres", "sqlite") to its statements; a
	// dialect missing from it runs nothing for this version.
	sql map[string][]string
	// run, when set, is the version's work written in Go instead, for what
	// SQL cannot say on both databases (see goMigrations).
	run func(ctx context.Context, tx *gorm.DB) error
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+?)(?:\.(postgres|sqlite))?\.sql$`)

// loadMigrations reads the numbered migrations, oldest first.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*migration{}
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		m := migrationName.FindStringSubmatch(base)
		if m == nil {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql or NNNN_name.{postgres,sqlite}.sql", base)
		}
		version, _ := strconv.Atoi(m[1])
		mig := byVersion[version]
		if mig == nil {
			mig = &migration{version: version, name: m[2], sql: map[string][]string{}}
			byVersion[version] = mig
		}
		if mig.name != m[2] {
			return nil, fmt.Errorf("migration %d has two names: %s and %s", version, mig.name, m[2])
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		stmts, err := splitStatements(string(b))
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", base, err)
		}
		dialects := []string{m[3]}
		if m[3] == "" {
			dialects = []string{"postgres", "sqlite"}
		}
		for _, d := range dialects {
			if _, dup := mig.sql[d]; dup {
				return nil, fmt.Errorf("migration %d has two files for %s", version, d)
			}
			mig.sql[d] = stmts
		}
	}
	out := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// splitStatements cuts a migration file into its statements: each ends
// with a semicolon at the end of a line, outside a $$ body. Comment lines
// and blank lines between statements are dropped.
func splitStatements(text string) ([]string, error) {
	var stmts []string
	var cur strings.Builder
	inBody := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "--")) {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.Count(line, "$$")%2 == 1 {
			inBody = !inBody
		}
		if !inBody && strings.HasSuffix(trimmed, ";") {
			stmts = append(stmts, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		return nil, fmt.Errorf("a statement does not end with a semicolon at the end of a line: %.60q", rest)
	}
	if len(stmts) == 0 {
		return nil, fmt.Errorf("no statement")
	}
	return stmts, nil
}

// goMigrations are the versions written in Go, run in the same
// transaction and order as the files.
var goMigrations = []migration{
	{version: 8, name: "client_id_nfc", run: normalizeClientIDs},
}

var migrations = func() []migration {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // the files are part of the binary; TestMigrationFiles loads them
	}
	for _, g := range goMigrations {
		if i := slices.IndexFunc(ms, func(m migration) bool { return m.version == g.version }); i >= 0 {
			panic(fmt.Sprintf("migration %d is both a file and Go", g.version))
		}
		ms = append(ms, g)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms
}()

// LatestVersion is the schema version this release migrates to.
func LatestVersion() int { return migrations[len(migrations)-1].version }

// Migrated says what Migrate did.
type Migrated struct {
	// Tables lists every table the models declare; Created those of them
	// this migration created, as found under its lock: of several
	// migrations at once, only the first creates any.
	Tables, Created []string
	// Ran lists the versions run now, oldest first; Version is the schema's
	// version after (the highest recorded).
	Ran     []int
	Version int
	// UpToDate is set when the migration found the schema as this build
	// leaves it and did nothing (schema_state.go): Created and Ran are
	// empty, and nothing was read but what says so.
	UpToDate bool
}

// missingTables returns those of the models' tables that tx does not have
// yet. Read under the migration's lock, so that it says what this
// migration will create, not what another one is creating.
func missingTables(tx *gorm.DB, tables []string) (missing []string) {
	for _, table := range tables {
		if !tx.Migrator().HasTable(table) {
			missing = append(missing, table)
		}
	}
	return missing
}

// runMigrations runs, in tx, the numbered migrations not yet recorded.
func runMigrations(ctx context.Context, tx *gorm.DB, dialect string) (Migrated, error) {
	var done []int
	if err := tx.Model(&models.SchemaVersion{}).Pluck("version", &done).Error; err != nil {
		return Migrated{}, fmt.Errorf("read schema versions: %w", err)
	}
	var out Migrated
	for _, m := range migrations {
		if slices.Contains(done, m.version) {
			continue
		}
		if m.run != nil {
			if err := m.run(ctx, tx); err != nil {
				return Migrated{}, fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
			}
		}
		for i, stmt := range m.sql[dialect] {
			// Past GORM's statement builder, which would read a "?" in a
			// trigger's text as a placeholder.
			if _, err := tx.Statement.ConnPool.ExecContext(ctx, stmt); err != nil {
				return Migrated{}, fmt.Errorf("migration %04d_%s, statement %d: %w", m.version, m.name, i+1, err)
			}
		}
		if err := tx.Create(&models.SchemaVersion{Version: m.version, AppliedAt: time.Now().UTC()}).Error; err != nil {
			return Migrated{}, fmt.Errorf("record migration %d: %w", m.version, err)
		}
		out.Ran = append(out.Ran, m.version)
	}
	out.Version = max(LatestVersion(), slices.Max(append(done, 0)))
	return out, nil
}
