package database_test

import (
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/webhooks"
)

// A database left at version 10 with webhook deliveries (no payment_id or
// client_id on them yet, and the indexes an unreleased build put on the
// events and the statuses) takes 0011 on upgrade: AutoMigrate adds the
// columns to the populated table, 0011 fills them from each delivery's
// event and drops those indexes, so the admin's filter by payment or
// client finds the old deliveries; one whose event was swept keeps "".
func TestUpgradeFrom10FillsDeliveriesPaymentAndClient(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, dialect string, db *gorm.DB) {
		backTo10(t, db)
		seedVersion10Deliveries(t, db)
		if err := database.Migrate(db); err != nil {
			t.Fatal(err)
		}
		var filled []struct{ ID int64 }
		db.Raw(`SELECT id FROM webhook_deliveries WHERE payment_id <> '' AND client_id <> '' ORDER BY id`).Scan(&filled)
		if len(filled) != 4 {
			t.Errorf("%d deliveries with a payment and client after the upgrade, want 4", len(filled))
		}

		wh, err := webhooks.New(db, nil, webhooks.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			filter webhooks.DeliveryFilter
			want   []int64
		}{
			{webhooks.DeliveryFilter{PaymentID: "pay_a"}, []int64{103, 101}},
			{webhooks.DeliveryFilter{PaymentID: "pay_b", Status: "FAILED"}, []int64{102}},
			{webhooks.DeliveryFilter{ClientID: "shop-2"}, []int64{104}},
			{webhooks.DeliveryFilter{}, []int64{105, 104, 103, 102, 101}},
		} {
			page, err := wh.Deliveries(t.Context(), c.filter, 50, "", "")
			if err != nil {
				t.Fatalf("%+v: %v", c.filter, err)
			}
			var got []int64
			for _, d := range page.Deliveries {
				got = append(got, d.ID)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%+v lists %v, want %v", c.filter, got, c.want)
			}
		}
		checkUpgraded(t, db, dialect)
	})
}

// backTo10 takes a migrated database back to version 10: the deliveries
// without payment_id and client_id or their indexes, the status index and
// the events' indexes an unreleased build of 0011's release made, and
// 0011 not recorded.
func backTo10(t *testing.T, db *gorm.DB) {
	t.Helper()
	undo(t, db, 11,
		`DROP INDEX idx_webhook_deliveries_payment`,
		`DROP INDEX idx_webhook_deliveries_client`,
		`DROP INDEX idx_webhook_deliveries_failed`,
		`ALTER TABLE webhook_deliveries DROP COLUMN payment_id`,
		`ALTER TABLE webhook_deliveries DROP COLUMN client_id`,
		`CREATE INDEX idx_webhook_deliveries_status ON webhook_deliveries (status, id)`,
		`CREATE INDEX idx_payment_events_payment ON payment_events (payment_id, seq)`,
		`CREATE INDEX idx_payment_events_client ON payment_events (client_id, seq)`)
	if db.Migrator().HasColumn("webhook_deliveries", "payment_id") {
		t.Fatal("version 10 still has webhook_deliveries.payment_id: the setup did not drop it")
	}
}

// seedVersion10Deliveries stores, as version 10 wrote them, an endpoint,
// three events of two payments of two clients, and five deliveries: two of
// pay_a's events, one of pay_b's (FAILED), one of shop-2's, and one of an
// event already swept.
func seedVersion10Deliveries(t *testing.T, db *gorm.DB) {
	t.Helper()
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	mustExec(t, db, `INSERT INTO webhook_endpoints (id, url, secret, event_types, client_id, created_at)
		VALUES ('we_1', 'https://shop.test/h', 's', '', '', ?)`, at)
	for _, e := range []struct {
		seq          int64
		pay, client  string
		kind, status string
	}{
		{1, "pay_a", "shop-1", "PAYMENT_CREATED", "CAPTURED"},
		{2, "pay_b", "shop-1", "PAYMENT_CREATED", "CAPTURED"},
		{3, "pay_a", "shop-1", "PAYMENT_REFUNDED", "PARTIALLY_REFUNDED"},
		{4, "pay_c", "shop-2", "PAYMENT_CREATED", "CAPTURED"},
	} {
		mustExec(t, db, `INSERT INTO payment_events (seq, type, at, idempotency_key, payment_id, client_id, payment_key,
			amount_minor, currency, method, payment_created_at, status, captured_minor, refunded_minor, replay_count, rejected_count)
			VALUES (?, ?, ?, 'k', ?, ?, 'k', 100, 'BRL', 'PIX', ?, ?, 100, 0, 0, 0)`, e.seq, e.kind, at, e.pay, e.client, at, e.status)
	}
	for _, d := range []struct {
		id, seq int64
		status  string
	}{{101, 1, "DELIVERED"}, {102, 2, "FAILED"}, {103, 3, "PENDING"}, {104, 4, "DELIVERED"}, {105, 9, "DELIVERED"}} {
		mustExec(t, db, `INSERT INTO webhook_deliveries (id, event_id, event_seq, endpoint_id, status, event_at, created_at,
			attempts, retries, next_attempt_at, claim_token, last_status, last_error)
			VALUES (?, ?, ?, 'we_1', ?, ?, ?, 0, 0, ?, 0, 0, '')`, d.id, d.seq, d.seq, d.status, at, at, at)
	}
}
