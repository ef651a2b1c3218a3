package dbtest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestCopiesMatchAMigration: a test's database, copied from the one
// migrated per test binary, has the same tables, columns, indexes,
// triggers and rows as one migrated on its own, and migrating it again
// finds nothing to do.
func TestCopiesMatchAMigration(t *testing.T) {
	ForEach(t, func(t *testing.T, copied DB) {
		var migrated DB
		if copied.Dialect == "postgres" {
			u := emptyPostgres(t)
			migrated = DB{Gorm: openMigrated(t, u), Dialect: "postgres", URL: u}
		} else {
			migrated = DB{Gorm: openMigrated(t, Empty(t, "sqlite")), Dialect: "sqlite"}
		}
		got, want := describe(t, copied), describe(t, migrated)
		if len(want) < 20 {
			t.Fatalf("a migrated database described in %d lines: the description reads nothing", len(want))
		}
		for _, line := range want {
			if !slices.Contains(got, line) {
				t.Errorf("the copy lacks: %s", line)
			}
		}
		for _, line := range got {
			if !slices.Contains(want, line) {
				t.Errorf("the copy has what a migration does not make: %s", line)
			}
		}
		report, err := database.MigrateReport(context.Background(), copied.Gorm)
		if err != nil || len(report.Ran) != 0 {
			t.Errorf("migrating the copy again: ran %v, %v; want nothing", report.Ran, err)
		}
	})
}

// describe lists a database's schema and the rows migrations write, one
// line each, without the schema's own name.
func describe(t *testing.T, db DB) []string {
	t.Helper()
	queries := []string{
		`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`,
		`SELECT 'version ' || version FROM schema_versions`,
		`SELECT 'currency ' || code || ' ' || digits FROM currencies`,
	}
	var schema string
	if db.Dialect == "postgres" {
		queries[0] = `SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') || ' ' || coalesce(character_maximum_length, 0)
			FROM information_schema.columns WHERE table_schema = current_schema()
			UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema()
			UNION ALL SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
			UNION ALL SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)
			UNION ALL SELECT relname || ' ' || coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE relnamespace = current_schema()::regnamespace
			UNION ALL SELECT proname || ' ' || prosrc FROM pg_proc WHERE pronamespace = current_schema()::regnamespace`
		if err := db.Gorm.Raw(`SELECT current_schema()`).Scan(&schema).Error; err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, q := range queries {
		out = append(out, lines(t, db.Gorm, q, schema)...)
	}
	return out
}

func lines(t *testing.T, db *gorm.DB, query, schema string) []string {
	t.Helper()
	var got []string
	if err := db.Raw(query).Scan(&got).Error; err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	for i, l := range got {
		if schema != "" {
			got[i] = strings.ReplaceAll(l, schema+".", "SCHEMA.")
		}
	}
	return got
}
