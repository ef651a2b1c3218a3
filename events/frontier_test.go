package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// delivery is a webhook delivery as a test stores it directly: no event,
// which the deliveries sweep does not read.
type delivery struct {
	id                      int64
	status                  string
	created                 time.Time
	lastAttempt, resentThen *time.Time
}

// addDeliveries stores ds to the endpoint we_all (which it creates), each
// with one attempt at its last attempt (else its creation).
func addDeliveries(t *testing.T, db dbtest.DB, ds []delivery) {
	t.Helper()
	if err := db.Gorm.FirstOrCreate(&models.WebhookEndpoint{ID: "we_all", URL: "https://a.test/", Secret: "s",
		CreatedAt: ds[0].created}).Error; err != nil {
		t.Fatal(err)
	}
	rows := make([]models.WebhookDelivery, len(ds))
	attempts := make([]models.WebhookAttempt, len(ds))
	for i, d := range ds {
		rows[i] = models.WebhookDelivery{ID: d.id, EventID: d.id, EventSeq: d.id, EndpointID: "we_all", Status: d.status,
			EventAt: d.created, CreatedAt: d.created, NextAttemptAt: d.created, LastAttemptAt: d.lastAttempt,
			ExpiresAt: d.resentThen}
		at := d.created
		if d.lastAttempt != nil {
			at = *d.lastAttempt
		}
		attempts[i] = models.WebhookAttempt{DeliveryID: d.id, At: at, Status: 500, DurationMS: 1}
	}
	if err := db.Gorm.CreateInBatches(rows, 500).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.CreateInBatches(attempts, 500).Error; err != nil {
		t.Fatal(err)
	}
	idsGiven(t, db)
}

// idsGiven moves PostgreSQL's sequence of delivery ids to the highest id
// stored, as inserts without an id would have: these tests give ids
// themselves, and the sweep reads the sequence (SQLite's AUTOINCREMENT
// follows given ids by itself).
func idsGiven(t *testing.T, db dbtest.DB) {
	t.Helper()
	if db.Dialect != "postgres" {
		return
	}
	if err := db.Gorm.Exec(`SELECT setval(pg_get_serial_sequence('webhook_deliveries', 'id'),
		GREATEST((SELECT max(id) FROM webhook_deliveries), 1))`).Error; err != nil {
		t.Fatal(err)
	}
}

// copyDelivery stores copies of the delivery id, with ids up to last, and
// an attempt of each: one statement each, where GORM's inserts take long
// under the race detector.
func copyDelivery(t *testing.T, db dbtest.DB, id, last int64) {
	t.Helper()
	if err := db.Gorm.Exec(`WITH RECURSIVE n(i) AS (SELECT ? + 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO webhook_deliveries (id, event_id, event_seq, endpoint_id, payment_id, client_id, status, event_at,
			created_at, attempts, retries, next_attempt_at, claim_token, last_attempt_at, last_status, last_error)
		SELECT n.i, n.i, n.i, d.endpoint_id, d.payment_id, d.client_id, d.status, d.event_at, d.created_at, d.attempts,
			d.retries, d.next_attempt_at, d.claim_token, d.last_attempt_at, d.last_status, d.last_error
		FROM n CROSS JOIN webhook_deliveries d WHERE d.id = ?`, id, last, id).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Exec(`INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms)
		SELECT d.id, a.at, a.status, a.error, a.duration_ms FROM webhook_deliveries d CROSS JOIN webhook_attempts a
		WHERE d.id > ? AND d.id <= ? AND a.delivery_id = ?`, id, last, id).Error; err != nil {
		t.Fatal(err)
	}
	idsGiven(t, db)
}

// deliveriesLeft lists the ids of the deliveries left, and of those that
// have attempts left.
func deliveriesLeft(t *testing.T, db dbtest.DB) string {
	t.Helper()
	var ds, as []int64
	if err := db.Gorm.Model(&models.WebhookDelivery{}).Order("id").Pluck("id", &ds).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Gorm.Model(&models.WebhookAttempt{}).Distinct("delivery_id").Order("delivery_id").Pluck("delivery_id", &as).Error; err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("deliveries %v, attempts %v", ds, as)
}

// sweepFrontier is the deliveries sweep's saved frontier (0 if none).
func sweepFrontier(t *testing.T, db dbtest.DB) int64 {
	t.Helper()
	var f []int64
	if err := db.Gorm.Model(&models.EventCursor{}).Where("name = ?", "delivery_sweep").Pluck("frontier", &f).Error; err != nil {
		t.Fatal(err)
	}
	if len(f) == 0 {
		return 0
	}
	return f[0]
}

// TestDeliverySweepFrontier: the deliveries sweep walks from its frontier,
// which passes the kept FAILED ones but never a pending delivery not
// resent (TestFrontierPassesResentDeliveries); a FAILED one is deleted,
// with its attempts, at the end of its keep through the expiry path; a
// delivery behind the frontier that is resent and then delivered, or a
// kept one cancelled with its endpoint, is deleted all the same; and a
// sweep with nothing new reads only what lies past the frontier.
func TestDeliverySweepFrontier(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		at := func(h int) *time.Time { v := base.Add(time.Duration(h) * time.Hour); return &v }
		// Made at base, but 9: 10 h later. The cutoffs at base+5h keep the
		// FAILED ones last tried at or after base+3h.
		addDeliveries(t, db, []delivery{
			{id: 1, status: "DELIVERED", created: base},
			{id: 2, status: "FAILED", created: base, lastAttempt: at(4)},
			{id: 3, status: "FAILED", created: base, lastAttempt: at(1)},
			{id: 4, status: "CANCELED", created: base},
			{id: 5, status: "FAILED", created: base, lastAttempt: at(4)},
			{id: 6, status: "PENDING", created: base},
			{id: 7, status: "DELIVERED", created: base},
			{id: 8, status: "FAILED", created: base, lastAttempt: at(4)},
			{id: 9, status: "DELIVERED", created: *at(10)},
		})
		sweep := func(h int) deliverySweep {
			t.Helper()
			done, err := st.sweepDeliveries(ctx, cutoffs{old: *at(h), failed: *at(h - 2)})
			if err != nil {
				t.Fatal(err)
			}
			return done
		}
		check := func(what string, wantFrontier int64, want string) {
			t.Helper()
			if got := deliveriesLeft(t, db); got != want {
				t.Errorf("%s: %s; want %s", what, got, want)
			}
			if got := sweepFrontier(t, db); got != wantFrontier {
				t.Errorf("%s: frontier %d, want %d", what, got, wantFrontier)
			}
		}

		// 3's keep is over; 1, 4 and 7 are old; the frontier stops before
		// 6, pending; the walk still deletes 7 past it.
		sweep(5)
		check("first sweep", 5, "deliveries [2 5 6 8 9], attempts [2 5 6 8 9]")

		// 6 delivered: the frontier passes it, and 8 (kept), up to 9, young.
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 6).Update("status", "DELIVERED")
		sweep(5)
		check("6 delivered", 8, "deliveries [2 5 8 9], attempts [2 5 8 9]")
		if done := sweep(5); done.read != 1 || done.deleted != 0 {
			t.Errorf("a sweep with nothing new read %d rows and deleted %d; want 1 (9, young) and 0", done.read, done.deleted)
		}

		// Behind the frontier: 2 resent (as webhooks' Resend does) and
		// then delivered; 5's endpoint deleted. Both go; the frontier
		// stays.
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 2).Updates(map[string]any{"status": "PENDING", "expires_at": at(6)})
		sweep(5)
		check("2 resent, pending", 8, "deliveries [2 5 8 9], attempts [2 5 8 9]")
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 2).Update("status", "DELIVERED")
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 5).Update("status", "CANCELED")
		sweep(5)
		check("2 delivered, 5 cancelled", 8, "deliveries [8 9], attempts [8 9]")

		// Past 8's keep, and 9 old: nothing left.
		sweep(12)
		check("everything old", 9, "deliveries [], attempts []")

		// Ids given again from 1 (the table truncated, its id generator
		// reset): behind the frontier, they are walked all the same.
		resetIDs(t, db)
		addDeliveries(t, db, []delivery{
			{id: 1, status: "DELIVERED", created: base},
			{id: 2, status: "DELIVERED", created: *at(20)},
		})
		sweep(12)
		check("ids given again", 1, "deliveries [2], attempts [2]")
	})
}

// TestQuietSweepStaysAtTheFrontier: once the newest deliveries are swept
// and nothing new comes, the frontier is past every delivery left, but
// not past the last id given: the walk stays there and does not read the
// kept FAILED deliveries behind it again.
func TestQuietSweepStaysAtTheFrontier(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		last := base.Add(4 * time.Hour)
		addDeliveries(t, db, []delivery{
			{id: 1, status: "FAILED", created: base, lastAttempt: &last},
			{id: 2, status: "DELIVERED", created: base},
		})
		c := cutoffs{old: base.Add(5 * time.Hour), failed: base.Add(3 * time.Hour)}
		if _, err := st.sweepDeliveries(ctx, c); err != nil {
			t.Fatal(err)
		}
		if got := deliveriesLeft(t, db); got != "deliveries [1], attempts [1]" {
			t.Fatalf("after the first sweep: %s; want 1 kept", got)
		}
		done, err := st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if done.read != 0 || sweepFrontier(t, db) != 2 {
			t.Errorf("a quiet sweep read %d rows, frontier %d; want 0 rows, frontier 2", done.read, sweepFrontier(t, db))
		}
	})
}

// TestSweepDoesNotReadKeptDeliveries: with 10,000 kept FAILED deliveries
// (2,500 on SQLite) behind the frontier, a sweep reads what lies past it (one young
// delivery), not them; the expiry statement reads them through
// idx_webhook_deliveries_failed_at (migration 0012), not the table; and
// past their keep they go in batches, with their attempts.
func TestSweepDoesNotReadKeptDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		last := base.Add(time.Hour)
		// SQLite is Go code here, which the race detector slows tenfold:
		// there a few batches' worth shows the same.
		kept := int64(10_000)
		if db.Dialect == "sqlite" {
			kept = 2_500
		}
		addDeliveries(t, db, []delivery{{id: 1, status: "FAILED", created: base, lastAttempt: &last}})
		copyDelivery(t, db, 1, kept)
		addDeliveries(t, db, []delivery{{id: kept + 1, status: "DELIVERED", created: base.Add(10 * time.Hour)}})
		c := cutoffs{old: base.Add(5 * time.Hour), failed: base.Add(-time.Hour)}
		first, err := st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if first.read < kept || first.deleted != 0 {
			t.Errorf("the first sweep read %d rows and deleted %d; want every one (%d), none", first.read, first.deleted, kept)
		}
		again, err := st.sweepDeliveries(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if again.read != 1 || again.deleted != 0 {
			t.Errorf("the next sweep read %d rows and deleted %d; want 1 (the young one), none", again.read, again.deleted)
		}

		if db.Dialect == "postgres" {
			db.Gorm.Exec(`ANALYZE webhook_deliveries`)
		}
		var q string
		switch st := st.(type) {
		case *postgresStore:
			q = st.q.SQL("expire_failed")
		case *sqliteStore:
			q = st.q.SQL("expire_failed")
		}
		plan := dbtest.Plan(t, db, q, c.failed, sweepBatch)
		if !strings.Contains(plan, "idx_webhook_deliveries_failed_at") {
			t.Errorf("the expiry delete does not read idx_webhook_deliveries_failed_at:\n%s", plan)
		}
		var sh shared
		switch st := st.(type) {
		case *postgresStore:
			sh = st.shared
		case *sqliteStore:
			sh = st.shared
		}
		// Behind the frontier, the resent and the cancelled deliveries are
		// read through indexes that hold no kept FAILED one.
		for name, index := range map[string]string{
			"delete_resent_behind": "idx_webhook_deliveries_resent", "delete_resent_behind_attempts": "idx_webhook_deliveries_resent",
			"delete_canceled_behind": "idx_webhook_deliveries_failed", "delete_canceled_behind_attempts": "idx_webhook_deliveries_failed",
		} {
			plan := dbtest.Plan(t, db, sh.q.SQL(name), kept, c.old)
			if !strings.Contains(plan, index+" ") && !strings.Contains(plan, index+"\n") && !strings.HasSuffix(plan, index) {
				t.Errorf("%s does not read %s:\n%s", name, index, plan)
			}
		}

		// Past the keep: all go, a batch at a time, with their attempts.
		gone, err := st.sweepDeliveries(ctx, cutoffs{old: c.old, failed: base.Add(2 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if gone.deleted != kept {
			t.Errorf("past the keep the sweep deleted %d deliveries; want %d", gone.deleted, kept)
		}
		if got, want := deliveriesLeft(t, db), fmt.Sprintf("deliveries [%d], attempts [%d]", kept+1, kept+1); got != want {
			t.Errorf("past the keep: %s; want %s", got, want)
		}
	})
}

// TestFrontierPassesResentDeliveries: a delivery resent before the walk
// reached it, and still pending (its endpoint still failing, retried up
// to WEBHOOK_MAX_AGE), does not hold the frontier back: the sweeps
// meanwhile would read again every kept FAILED delivery after it. Behind
// the frontier it goes as any resent one: delivered, with the resent
// ones; FAILED again, at the end of its keep.
func TestFrontierPassesResentDeliveries(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		base := now()
		at := func(h int) *time.Time { v := base.Add(time.Duration(h) * time.Hour); return &v }
		addDeliveries(t, db, []delivery{
			{id: 1, status: "PENDING", created: base, lastAttempt: at(1), resentThen: at(8)},
			{id: 2, status: "FAILED", created: base, lastAttempt: at(4)},
			{id: 3, status: "PENDING", created: base, lastAttempt: at(1), resentThen: at(8)},
			{id: 4, status: "FAILED", created: base, lastAttempt: at(4)},
			{id: 5, status: "DELIVERED", created: *at(10)},
		})
		sweep := func(h int) deliverySweep {
			t.Helper()
			done, err := st.sweepDeliveries(ctx, cutoffs{old: *at(h), failed: *at(h - 2)})
			if err != nil {
				t.Fatal(err)
			}
			return done
		}
		sweep(5)
		if got := sweepFrontier(t, db); got != 4 {
			t.Errorf("frontier %d past two resent deliveries still pending; want 4", got)
		}
		if done := sweep(5); done.read != 1 {
			t.Errorf("the next sweep read %d rows; want 1 (5, young), not the kept ones again", done.read)
		}
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 1).Update("status", "DELIVERED")
		db.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", 3).Updates(map[string]any{"status": "FAILED", "last_attempt_at": at(6)})
		sweep(5)
		if got, want := deliveriesLeft(t, db), "deliveries [2 3 4 5], attempts [2 3 4 5]"; got != want {
			t.Errorf("1 delivered, 3 failed again: %s; want %s", got, want)
		}
		sweep(12)
		if got, want := deliveriesLeft(t, db), "deliveries [], attempts []"; got != want {
			t.Errorf("past every keep: %s; want %s", got, want)
		}
	})
}

// resetIDs sets the generator of delivery ids back to the start, as
// TRUNCATE … RESTART IDENTITY does on PostgreSQL, and deleting the
// table's sqlite_sequence row on SQLite.
func resetIDs(t *testing.T, db dbtest.DB) {
	t.Helper()
	stmt := `DELETE FROM sqlite_sequence WHERE name = 'webhook_deliveries'`
	if db.Dialect == "postgres" {
		stmt = `ALTER SEQUENCE webhook_deliveries_id_seq RESTART`
	}
	if err := db.Gorm.Exec(stmt).Error; err != nil {
		t.Fatal(err)
	}
}
