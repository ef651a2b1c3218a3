package staff

import (
	"fmt"

	"gorm.io/gorm"
)

// migrationLockID is the advisory lock database.Migrate holds, taken here
// too so that instances starting at once run this one after another.
const migrationLockID = 0x636d706179 // "cmpay"

// Migrate adds what GORM's AutoMigrate cannot declare, after
// database.Migrate has created the tables: triggers that make the audit
// table append-only on both databases (an UPDATE, DELETE or TRUNCATE of it
// fails, whoever sends it), and the partial index the audit page reads the
// admin's payment attempts through (all of them, and one staff member's),
// which are a sliver of all attempts. Safe to run at every start.
//
// The indexes are on the payments engine's table; they are created here
// rather than declared on models.IdempotencyAttempt only to keep this change
// out of the payments models: they can move there as
// `index:…,where:transport = 'admin'` tags with the same names.
func Migrate(db *gorm.DB) error {
	err := db.Transaction(func(tx *gorm.DB) error {
		stmts := sqliteAppendOnly
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec(`SELECT pg_advisory_xact_lock(?)`, migrationLockID).Error; err != nil {
				return err
			}
			var present bool
			if err := tx.Raw(`SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'staff_audit_append_only'
				AND tgrelid = 'staff_audit'::regclass)`).Scan(&present).Error; err != nil {
				return err
			}
			stmts = nil
			if !present {
				stmts = postgresAppendOnly
			}
		}
		stmts = append(stmts,
			`CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin
			 ON idempotency_attempts (at, id) WHERE transport = 'admin'`,
			`CREATE INDEX IF NOT EXISTS idx_idempotency_attempts_admin_actor
			 ON idempotency_attempts (actor, at, id) WHERE transport = 'admin'`)
		for _, stmt := range stmts {
			if err := tx.Exec(stmt).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate staff tables: %w", err)
	}
	return nil
}

var postgresAppendOnly = []string{
	`CREATE OR REPLACE FUNCTION staff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
	 BEGIN
	   RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
	 END $$`,
	`CREATE TRIGGER staff_audit_append_only BEFORE UPDATE OR DELETE ON staff_audit
	 FOR EACH ROW EXECUTE FUNCTION staff_audit_append_only()`,
	`CREATE TRIGGER staff_audit_no_truncate BEFORE TRUNCATE ON staff_audit
	 FOR EACH STATEMENT EXECUTE FUNCTION staff_audit_append_only()`,
}

// SQLite has no TRUNCATE; DELETE without WHERE fires the DELETE trigger.
var sqliteAppendOnly = []string{
	`CREATE TRIGGER IF NOT EXISTS staff_audit_no_update BEFORE UPDATE ON staff_audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE refused'); END`,
	`CREATE TRIGGER IF NOT EXISTS staff_audit_no_delete BEFORE DELETE ON staff_audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE refused'); END`,
}
