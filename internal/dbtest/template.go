package dbtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cmpay/cmpay/database"
)

// A package's tests asked for up to a hundred fresh migrated databases, and
// each migration cost about 0.2 s of CPU under -race on either database,
// mostly GORM reading the schema back table by table (on PostgreSQL half of
// it in the server). So each test binary migrates once per dialect and
// copies: the SQLite file, or a PostgreSQL schema's dump, run again under
// each test's own schema name.

// pgTemplate is the SQL that recreates a migrated schema, tables, triggers
// and rows (schema_versions, currencies), naming it schema everywhere.
type pgTemplate struct {
	schema string
	// dump is empty when pg_dump is not installed: then each test
	// migrates its own schema.
	dump string
}

var (
	pgOnce    sync.Once
	pgTmpl    pgTemplate
	pgTmplErr error
)

// migratedPostgres migrates a schema once for the whole test binary, dumps
// it with pg_dump and drops it.
func migratedPostgres(serverURL string) (pgTemplate, error) {
	pgOnce.Do(func() { pgTmpl, pgTmplErr = dumpMigratedSchema(serverURL) })
	return pgTmpl, pgTmplErr
}

func dumpMigratedSchema(serverURL string) (pgTemplate, error) {
	pgDump := findPGDump()
	if pgDump == "" {
		return pgTemplate{}, nil
	}
	schema := "test_template_" + randomHex(8)
	if err := execScript(`CREATE SCHEMA ` + schema); err != nil {
		return pgTemplate{}, fmt.Errorf("create the template schema: %w", err)
	}
	defer func() { _ = execScript(`DROP SCHEMA ` + schema + ` CASCADE`) }()

	u, err := withSearchPath(serverURL, schema)
	if err != nil {
		return pgTemplate{}, err
	}
	db, err := database.Open(u, database.Options{Logger: quiet})
	if err != nil {
		return pgTemplate{}, err
	}
	err = database.Migrate(db)
	_ = database.Close(db)
	if err != nil {
		return pgTemplate{}, fmt.Errorf("migrate the template schema: %w", err)
	}

	out, err := exec.Command(pgDump, "--dbname="+serverURL, "--schema="+schema, "--no-owner", "--no-privileges",
		"--inserts", "--rows-per-insert=500").Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return pgTemplate{}, fmt.Errorf("pg_dump the migrated schema: %w: %s", err, stderr)
	}
	return pgTemplate{schema: schema, dump: restorable(string(out))}, nil
}

// restorable keeps the statements of a plain pg_dump that make objects and
// rows, and drops its session settings (search_path among them), which
// would stay on the pooled connection that runs it, and psql's
// meta-commands.
func restorable(dump string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(dump))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, `\`) || strings.HasPrefix(line, "SET ") ||
			strings.HasPrefix(line, "SELECT pg_catalog.set_config(") || strings.HasPrefix(line, "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// execScript runs SQL statements on the test server in one round trip (the
// simple protocol, as a statement without arguments goes), past GORM, which
// would take a "?" in a trigger's body for a placeholder.
func execScript(script string) error {
	if adminErr != nil {
		return adminErr
	}
	if admin == nil {
		return fmt.Errorf("dbtest: no connection to the test server yet (adminDB opens it)")
	}
	sqlDB, err := admin.DB()
	if err != nil {
		return err
	}
	_, err = sqlDB.ExecContext(context.Background(), script)
	return err
}

// findPGDump returns the pg_dump beside the server programs the clusters
// use (pgBinDir), or the one on PATH; "" if none.
func findPGDump() string {
	if bin := pgBinDir(); bin != "" {
		if p := filepath.Join(bin, "pg_dump"); fileExists(p) {
			return p
		}
	}
	p, _ := exec.LookPath("pg_dump")
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var (
	sqliteOnce     sync.Once
	sqliteTemplate string
	sqliteErr      error
)

// migratedSQLite returns the path of a SQLite file migrated once for the
// whole test binary; Main removes it. It is checkpointed and closed before
// it is copied, so that it holds everything (the write-ahead log is not
// copied).
func migratedSQLite() (string, error) {
	sqliteOnce.Do(func() {
		sqliteTemplate, sqliteErr = migrateSQLiteTemplate()
	})
	return sqliteTemplate, sqliteErr
}

func migrateSQLiteTemplate() (string, error) {
	dir, err := os.MkdirTemp("", "cmpay-dbtest-")
	if err != nil {
		return "", err
	}
	templateDir = dir
	path := filepath.Join(dir, "migrated.db")
	db, err := database.Open("sqlite:"+path+sqliteSettings, database.Options{Logger: quiet})
	if err != nil {
		return "", err
	}
	err = database.Migrate(db)
	if err == nil {
		err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error
	}
	if cerr := database.Close(db); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("migrate the SQLite template: %w", err)
	}
	return path, nil
}

// templateDir holds the migrated template files, if any were made.
var templateDir string

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}
