package database

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMigrationModulesCoverGoMod: every module of GORM, its PostgreSQL
// driver or SQLite's in go.mod is among migrationModules, whose versions
// the build fingerprint holds: a bump of any of them (SQLite's engine
// included, a module of its own) changes what AutoMigrate may make of the
// same models, and must make the next start migrate whole.
func TestMigrationModulesCoverGoMod(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) < 2 {
			continue
		}
		path := fields[0]
		if strings.HasPrefix(path, "gorm.io/") || strings.HasPrefix(path, "github.com/ncruces/go-sqlite3") {
			if !slices.Contains(migrationModules, path) {
				t.Errorf("go.mod requires %s, which the build fingerprint leaves out (migrationModules)", path)
			}
		}
	}
}

// TestMigrationCodeIsFingerprinted: every file that declares a function of
// the migration (what runs it, what it writes, how it judges the schema)
// is in migrationCode, whose source the build fingerprint hashes: moved to
// a file left out, a change to it would let a start skip a migration this
// build makes otherwise.
func TestMigrationCodeIsFingerprinted(t *testing.T) {
	t.Parallel()
	steps := []string{"MigrateReport", "migrateAll", "writeCurrencies", "openGorm", "missingTables", "runMigrations",
		"loadMigrations", "buildFingerprint", "schemaCatalog", "upToDate", "recordState"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && slices.Contains(steps, fn.Name.Name) {
				found[fn.Name.Name] = name
			}
		}
	}
	for _, step := range steps {
		name, ok := found[step]
		if !ok {
			t.Errorf("no file declares %s: update this test's list of the migration's functions", step)
			continue
		}
		if _, err := fs.Stat(migrationCode, name); err != nil {
			t.Errorf("%s declares %s but is not in migrationCode, which the build fingerprint hashes", name, step)
		}
	}
}
