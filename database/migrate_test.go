package database

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestMigrationFiles loads the numbered migrations the binary carries:
// names, versions and statements are well formed.
func TestMigrationFiles(t *testing.T) {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if i > 0 && m.version <= ms[i-1].version {
			t.Errorf("migration %d after %d", m.version, ms[i-1].version)
		}
		if len(m.sql) == 0 {
			t.Errorf("migration %d runs nothing anywhere", m.version)
		}
	}
	if want := max(ms[len(ms)-1].version, goMigrations[len(goMigrations)-1].version); LatestVersion() != want {
		t.Errorf("LatestVersion = %d, want %d", LatestVersion(), want)
	}
}

func TestLoadMigrationsRefuses(t *testing.T) {
	for name, files := range map[string]fstest.MapFS{
		"bad name":       {"migrations/3_x.sql": {Data: []byte("SELECT 1;")}},
		"two names":      {"migrations/0003_a.postgres.sql": {Data: []byte("SELECT 1;")}, "migrations/0003_b.sqlite.sql": {Data: []byte("SELECT 1;")}},
		"two files":      {"migrations/0003_a.sql": {Data: []byte("SELECT 1;")}, "migrations/0003_a.sqlite.sql": {Data: []byte("SELECT 1;")}},
		"no semicolon":   {"migrations/0003_a.sql": {Data: []byte("SELECT 1")}},
		"only a comment": {"migrations/0003_a.sql": {Data: []byte("-- nothing\n")}},
		"open $$ body":   {"migrations/0003_a.sql": {Data: []byte("CREATE FUNCTION f() AS $$\nBEGIN;\n")}},
	} {
		if _, err := loadMigrations(files); err == nil {
			t.Errorf("%s: loaded without an error", name)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	text := `-- header
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'no; really';
END $$;

-- the trigger
CREATE TRIGGER t BEFORE DELETE ON x
BEGIN SELECT RAISE(ABORT, 'no'); END;
DROP INDEX IF EXISTS a; -- not the end: the line does not end with it
DROP INDEX IF EXISTS b;
`
	got, err := splitStatements(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n\tRAISE EXCEPTION 'no; really';\nEND $$;",
		"CREATE TRIGGER t BEFORE DELETE ON x\nBEGIN SELECT RAISE(ABORT, 'no'); END;",
		"DROP INDEX IF EXISTS a; -- not the end: the line does not end with it\nDROP INDEX IF EXISTS b;",
	}
	if !slices.Equal(got, want) {
		t.Errorf("statements:\n%s", strings.Join(got, "\n----\n"))
	}
}
