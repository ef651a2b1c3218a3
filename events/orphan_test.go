package events

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
)

// TestSweepLeavesNoAttemptBehind: each of the sweep's deletes runs as two
// statements, the attempts and then their deliveries. On PostgreSQL a
// delivery may become deletable between the two (delivered, or cancelled
// with its endpoint, committed by another instance): the second statement
// then sees it, the first did not. It must stay, with its attempts, until
// the next sweep takes both, rather than go and leave its attempts for
// good, which no sweep reads.
func TestSweepLeavesNoAttemptBehind(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		if db.Dialect == "sqlite" {
			// The first statement takes SQLite's one write lock: no other
			// connection changes a delivery until the transaction ends.
			t.Skip("SQLite lets no write in between")
		}
		st, ctx := openStore(t, db), t.Context()
		sh := st.(*postgresStore).shared
		base := now()
		old, resent := base.Add(5*time.Hour), base.Add(6*time.Hour)
		addDeliveries(t, db, []delivery{
			{id: 1, status: "PENDING", created: base},
			{id: 2, status: "PENDING", created: base, resentThen: &resent},
			{id: 3, status: "FAILED", created: base},
		})
		delivered := func(id int64) string {
			return fmt.Sprintf(`WITH a AS (INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms)
				VALUES (%d, now(), 200, '', 1)) UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE id = %d`, id, id)
		}
		for _, tt := range []struct {
			id                   int64
			attempts, deliveries string
			change               string
			args                 []any
		}{
			{1, "delete_finished_attempts", "delete_finished_deliveries", delivered(1), []any{int64(0), int64(1), old}},
			{2, "delete_resent_behind_attempts", "delete_resent_behind", delivered(2), []any{int64(3), old}},
			{3, "delete_canceled_behind_attempts", "delete_canceled_behind",
				`UPDATE webhook_deliveries SET status = 'CANCELED' WHERE id = 3`, []any{int64(3), old}},
		} {
			err := sh.db.Tx(ctx, func(tx sqlq.Runner) error {
				if _, err := tx.Exec(ctx, sh.q.SQL(tt.attempts), tt.args...); err != nil {
					return err
				}
				// Another connection, committed before the second statement.
				if _, err := sh.db.Exec(ctx, tt.change); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, sh.q.SQL(tt.deliveries), tt.args...)
				return err
			})
			if err != nil {
				t.Fatalf("%s: %v", tt.deliveries, err)
			}
			var orphans int64
			if err := sh.db.QueryRow(ctx, `SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = $1
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = a.delivery_id)`, tt.id).Scan(&orphans); err != nil {
				t.Fatal(err)
			}
			if orphans != 0 {
				t.Errorf("%s deleted delivery %d and left %d of its attempts", tt.deliveries, tt.id, orphans)
			}
			// The next sweep's same statements take both.
			if _, err := sh.deleteInTx(ctx, sh.q.SQL(tt.attempts), sh.q.SQL(tt.deliveries), tt.args...); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := deliveriesLeft(t, db), "deliveries [], attempts []"; got != want {
			t.Errorf("after the next sweeps: %s; want %s", got, want)
		}
	})
}

// TestSweepLooksAttemptsUp: the deliveries deletes that leave a delivery
// with attempts (TestSweepLeavesNoAttemptBehind) look each one's attempts
// up through idx_webhook_attempts_delivery, rather than read every attempt
// kept, which PostgreSQL would for a NOT EXISTS among many delivered rows.
func TestSweepLooksAttemptsUp(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st := openStore(t, db)
		base := now()
		last := base.Add(time.Hour)
		// SQLite plans without statistics: fewer rows show the same.
		n := int64(20_000)
		if db.Dialect == "sqlite" {
			n = 2_000
		}
		addDeliveries(t, db, []delivery{{id: 1, status: "FAILED", created: base, lastAttempt: &last}})
		copyDelivery(t, db, 1, n)
		for _, stmt := range []string{
			`UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE id % 2 = 0`,
			`UPDATE webhook_deliveries SET status = 'CANCELED' WHERE id % 10 = 1`,
			`UPDATE webhook_deliveries SET expires_at = created_at WHERE id % 100 = 0`,
		} {
			if err := db.Gorm.Exec(stmt).Error; err != nil {
				t.Fatal(err)
			}
		}
		if db.Dialect == "postgres" {
			if err := db.Gorm.Exec(`ANALYZE`).Error; err != nil {
				t.Fatal(err)
			}
		}
		var sh shared
		switch st := st.(type) {
		case *postgresStore:
			sh = st.shared
		case *sqliteStore:
			sh = st.shared
		}
		old := base.Add(5 * time.Hour)
		for name, args := range map[string][]any{
			"delete_finished_deliveries": {int64(0), int64(sweepBatch), old},
			"delete_resent_behind":       {n, old},
			"delete_canceled_behind":     {n, old},
		} {
			plan := dbtest.Plan(t, db, sh.q.SQL(name), args...)
			if !strings.Contains(plan, "idx_webhook_attempts_delivery") || strings.Contains(plan, "Seq Scan on webhook_attempts") {
				t.Errorf("%s does not look the attempts up by idx_webhook_attempts_delivery:\n%s", name, plan)
			}
		}
	})
}
