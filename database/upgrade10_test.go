package database_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// A database left at version 9 (0007's append-only trigger, as the
// release before 0010 made it) takes 0010 on upgrade: the settlement's
// APPLIED -> REFUSED/PROCESSOR_REFUSED goes through, anything else on an
// admin attempt is still refused.
func TestUpgradeFrom9LetsOnlyTheRefusalThrough(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		// Back to version 9: 0007's trigger again, 0010 not recorded.
		old, err := os.ReadFile("migrations/0007_admin_attempts_append_only." + dialect + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		if dialect == "sqlite" {
			mustExec(t, db, `DROP TRIGGER admin_attempts_no_update`)
			mustExec(t, db, `DROP TRIGGER admin_attempts_no_delete`)
		}
		undo(t, db, 10, string(old))
		at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		mustExec(t, db, `INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, transport, actor, request_id)
			VALUES ('pay_x', 'CANCEL_PAYMENT', 'k', 'APPLIED', ?, 'admin', 'ana', 'op_x')`, at)
		if err := db.Exec(`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED'`).Error; err == nil {
			t.Fatal("version 9 let the refusal through: the setup did not restore 0007")
		}
		if err := database.Migrate(db); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED', actor = 'mallory'`,
			`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED', at = CURRENT_TIMESTAMP`,
			`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED', request_id = 'op_y'`,
			`DELETE FROM idempotency_attempts`,
		} {
			if err := db.Exec(stmt).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want refused", stmt, err)
			}
		}
		if err := db.Exec(`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED'`).Error; err != nil {
			t.Errorf("the processor's refusal after the upgrade: %v", err)
		}
		if err := db.Exec(`UPDATE idempotency_attempts SET outcome = 'APPLIED', refusal = ''`).Error; err == nil {
			t.Error("a REFUSED admin attempt set back to APPLIED")
		}
	})
}
