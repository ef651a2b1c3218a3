package database

import (
	"os"
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
