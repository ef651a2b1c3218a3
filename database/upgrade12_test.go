package database_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// A database left at version 11 with FAILED webhook deliveries (no body
// column yet, nor the indexes of the FAILED ones by their last attempt
// and of the resent ones) takes 0012 on upgrade: AutoMigrate adds the
// body, NULL on the deliveries already there (whose resend builds its
// body from their event, as before), and 0012 makes both indexes, the
// same as a new database's.
func TestUpgradeFrom11IndexesFailedDeliveries(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		backTo11(t, db)
		at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
		mustExec(t, db, `INSERT INTO webhook_endpoints (id, url, secret, event_types, client_id, created_at)
			VALUES ('we_1', 'https://shop.test/h', 's', '', '', ?)`, at)
		for id, status := range map[int64]string{1: "FAILED", 2: "DELIVERED", 3: "FAILED"} {
			mustExec(t, db, `INSERT INTO webhook_deliveries (id, event_id, event_seq, endpoint_id, payment_id, client_id,
				status, event_at, created_at, attempts, retries, next_attempt_at, claim_token, last_attempt_at, last_status,
				last_error) VALUES (?, ?, ?, 'we_1', 'pay_a', 'shop-1', ?, ?, ?, 1, 1, ?, 0, ?, 500, '')`,
				id, id, id, status, at, at, at, at)
		}
		if err := database.Migrate(db); err != nil {
			t.Fatal(err)
		}
		var withBody, rows int64
		db.Raw(`SELECT count(*) FROM webhook_deliveries WHERE body IS NOT NULL`).Scan(&withBody)
		db.Raw(`SELECT count(*) FROM webhook_deliveries`).Scan(&rows)
		if withBody != 0 || rows != 3 {
			t.Errorf("after the upgrade: %d deliveries, %d with a body; want 3, none", rows, withBody)
		}
		checkUpgraded(t, db, dialect)
	})
}

// backTo11 takes a migrated database back to version 11: the deliveries
// without their body or 0012's indexes, and 0012 not recorded.
func backTo11(t *testing.T, db *gorm.DB) {
	t.Helper()
	undo(t, db, 12,
		`DROP INDEX idx_webhook_deliveries_failed_at`,
		`DROP INDEX idx_webhook_deliveries_resent`,
		`ALTER TABLE webhook_deliveries DROP COLUMN body`)
	if db.Migrator().HasColumn("webhook_deliveries", "body") {
		t.Fatal("version 11 still has webhook_deliveries.body: the setup did not drop it")
	}
}
