package database_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestMigrateUpgradesVersion2 upgrades a database as CMPay v2 left it
// (testdata/schema_v2_*.sql, dumped from a v2 server) with rows of every
// kind, on both databases; checkUpgraded then holds it to the schema of a
// new database.
func TestMigrateUpgradesVersion2(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := openShape(t, dialect, "v2")
			at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
			mustExec(t, db, `INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
				status, captured_minor, refunded_minor, captured_at, replay_count, rejected_count)
				VALUES ('pay_v2', 'shop-7', 'order-2', 5000, 'BRL', 'CREDIT_CARD', ?, 'PARTIALLY_REFUNDED', 5000, 1000, ?, 0, 0)`, at, at)
			mustExec(t, db, `INSERT INTO refunds (id, payment_id, amount_minor, reason, idempotency_key, created_at)
				VALUES ('ref_v2', 'pay_v2', 1000, 'damaged', 'refund-1', ?)`, at)
			mustExec(t, db, `INSERT INTO staff_accounts (username, role, password_hash, must_change_password, created_at, updated_at, password_changed_at)
				VALUES ('alice', 'admin', 'x', false, ?, ?, ?)`, at, at, at)
			mustExec(t, db, `INSERT INTO staff_audit (at, actor, address, action, target, outcome, detail)
				VALUES (?, 'alice', '127.0.0.1', 'sign_in', '', 'ok', '')`, at)

			for range 2 { // the second run finds nothing to do
				if err := database.Migrate(db); err != nil {
					t.Fatalf("migrate: %v", err)
				}
			}
			var n int64
			db.Raw(`SELECT COUNT(*) FROM refunds r JOIN payments p ON p.id = r.payment_id WHERE p.refunded_minor = r.amount_minor`).Scan(&n)
			if n != 1 {
				t.Errorf("the v2 payment and its refund: %d rows after the upgrade, want 1", n)
			}
			if err := db.Exec(`DELETE FROM staff_audit`).Error; err == nil {
				t.Error("the upgraded audit log can be deleted from")
			}
			checkUpgraded(t, db, dialect)
		})
	}
}

// eachMigrated runs test on each dialect, side by side, with a database of
// v2's shape migrated to the latest version: a migration's upgrade test
// takes it back to the version before (undo), stores what that version
// wrote, and migrates again.
func eachMigrated(t *testing.T, test func(t *testing.T, dialect string, db *gorm.DB)) {
	t.Helper()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := openShape(t, dialect, "v2")
			if err := database.Migrate(db); err != nil {
				t.Fatal(err)
			}
			test(t, dialect, db)
		})
	}
}

// undo takes a migrated database back to before the migration version:
// runs the statements that undo it, then forgets it was run.
func undo(t *testing.T, db *gorm.DB, version int, statements ...string) {
	t.Helper()
	for _, stmt := range statements {
		mustExec(t, db, stmt)
	}
	mustExec(t, db, `DELETE FROM schema_versions WHERE version = ?`, version)
}

// openShape opens an empty database of the dialect and creates in it the
// schema of a released version (testdata/schema_<version>_<dialect>.sql).
func openShape(t *testing.T, dialect, version string) *gorm.DB {
	t.Helper()
	db, err := database.Open(dbtest.Empty(t, dialect), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(db) })
	schema, err := os.ReadFile("testdata/schema_" + version + "_" + dialect + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(string(schema)).Error; err != nil {
		t.Fatalf("create the %s schema: %v", version, err)
	}
	return db
}

// checkUpgraded holds an upgraded database to a new one's: every numbered
// migration recorded once, and the same tables, columns, indexes, checks
// and triggers as a database migrated from nothing. What an upgrade leaves
// different from a new database is a migration missing. The upgrade must
// have recorded its state too: the next start finds the schema up to date.
func checkUpgraded(t *testing.T, db *gorm.DB, dialect string) {
	t.Helper()
	if m := migrateReport(t, db); !m.UpToDate {
		t.Errorf("the migration after the upgrade ran again: %+v", m)
	}
	var versions []int
	db.Raw(`SELECT version FROM schema_versions ORDER BY version`).Scan(&versions)
	if len(versions) == 0 || versions[len(versions)-1] != database.LatestVersion() || slices.Compact(slices.Clone(versions)) == nil {
		t.Errorf("schema versions = %v, want every one up to %d", versions, database.LatestVersion())
	}
	fresh, err := database.Open(dbtest.Empty(t, dialect), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(fresh) })
	if err := database.Migrate(fresh); err != nil {
		t.Fatal(err)
	}
	var freshVersions []int
	fresh.Raw(`SELECT version FROM schema_versions ORDER BY version`).Scan(&freshVersions)
	if !slices.Equal(versions, freshVersions) {
		t.Errorf("schema versions = %v, a new database's %v", versions, freshVersions)
	}
	got, want := describe(t, db, dialect), describe(t, fresh, dialect)
	for _, line := range want {
		if !slices.Contains(got, line) {
			t.Errorf("the upgraded database lacks: %s", line)
		}
	}
	for _, line := range got {
		if !slices.Contains(want, line) {
			t.Errorf("the upgraded database has, where a new one has not: %s", line)
		}
	}
}

// describe lists a database's schema, one line per column, index, check
// constraint and trigger, in a form that does not depend on the order
// things were created in.
func describe(t *testing.T, db *gorm.DB, dialect string) []string {
	t.Helper()
	var lines []string
	scan := func(query string) {
		rows, err := db.Raw(query).Rows()
		if err != nil {
			t.Fatalf("describe: %v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = fmt.Sprint(v)
				if b, ok := v.([]byte); ok {
					parts[i] = string(b)
				}
			}
			lines = append(lines, strings.Join(parts, " | "))
		}
	}
	if dialect == "postgres" {
		scan(`SELECT 'column', table_name, column_name, data_type, is_nullable, COALESCE(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema()`)
		scan(`SELECT 'index', tablename, indexname, replace(indexdef, current_schema() || '.', '')
			FROM pg_indexes WHERE schemaname = current_schema()`)
		scan(`SELECT 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`)
		scan(`SELECT 'trigger', tgrelid::regclass::text, tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
			WHERE NOT tgisinternal AND c.relnamespace = current_schema()::regnamespace`)
		scan(`SELECT 'option', relname, array_to_string(reloptions, ',') FROM pg_class
			WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NOT NULL`)
	} else {
		scan(`SELECT 'column', m.name, p.name, lower(p.type), p."notnull", COALESCE(p.dflt_value, ''), p.pk
			FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
		scan(`SELECT 'index', tbl_name, name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index'`)
		scan(`SELECT 'trigger', tbl_name, name FROM sqlite_master WHERE type = 'trigger'`)
		var tables []struct{ Name, SQL string }
		db.Raw(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&tables)
		check := regexp.MustCompile("CONSTRAINT `?(\\w+)`? CHECK \\((.*?)\\)(,|\\)$)")
		for _, tb := range tables {
			for _, m := range check.FindAllStringSubmatch(tb.SQL, -1) {
				lines = append(lines, "constraint | "+tb.Name+" | "+m[1]+" | "+m[2])
			}
		}
	}
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	sort.Strings(lines)
	return lines
}

// TestMigrateNormalizesClientIDs upgrades a v2 database whose client ids
// arrived in both Unicode forms: every one becomes NFC, except a key held
// under both forms, whose NFC row stays the one requests reach.
func TestMigrateNormalizesClientIDs(t *testing.T) {
	t.Parallel()
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := openShape(t, dialect, "v2")
			at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
			for i, c := range []struct{ id, client, key string }{
				{"pay_a", nfd, "order-1"}, {"pay_b", nfd, "order-2"}, {"pay_c", nfc, "order-2"},
			} {
				mustExec(t, db, `INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
					status, captured_minor, refunded_minor, captured_at, replay_count, rejected_count)
					VALUES (?, ?, ?, 5000, 'BRL', 'PIX', ?, 'CAPTURED', 5000, 0, ?, 0, 0)`, c.id, c.client, c.key, at, at)
				mustExec(t, db, `INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, payment_id, created_at)
					VALUES (?, ?, 'CREATE_PAYMENT', ?, 2, ?, ?)`, c.client, c.key, []byte{byte(i)}, c.id, at)
			}
			mustExec(t, db, `INSERT INTO api_tokens (id, name, client_id, scopes, token_hash, created_at)
				VALUES ('tok_a', 'shop', ?, 'payments:read', 'h', ?)`, nfd, at)
			if err := database.Migrate(db); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			for _, q := range []struct {
				sql  string
				want string
			}{
				{`SELECT client_id FROM payments WHERE id = 'pay_a'`, nfc},
				{`SELECT client_id FROM payments WHERE id = 'pay_b'`, nfc},
				{`SELECT client_id FROM api_tokens WHERE id = 'tok_a'`, nfc},
				{`SELECT client_id FROM idempotency_keys WHERE payment_id = 'pay_a'`, nfc},
				{`SELECT payment_id FROM idempotency_keys WHERE client_id = '` + nfc + `' AND idempotency_key = 'order-2'`, "pay_c"},
				{`SELECT client_id FROM idempotency_keys WHERE payment_id = 'pay_b'`, nfd},
			} {
				var got string
				if err := db.Raw(q.sql).Scan(&got).Error; err != nil {
					t.Fatalf("%s: %v", q.sql, err)
				}
				if got != q.want {
					t.Errorf("%s = %+q, want %+q", q.sql, got, q.want)
				}
			}
		})
	}
}
