package webhooks

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// seedMany stores 10,000 events of 3,000 payments of 40 clients and 50,000
// deliveries of them to five endpoints, mostly delivered (a few pending,
// failed and cancelled), as the admin meets them at scale.
func seedMany(t *testing.T, db dbtest.DB) {
	t.Helper()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, q := range []string{
		`INSERT INTO webhook_endpoints (id, url, secret, event_types, client_id, created_at)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5)
		SELECT 'we_' || i, 'https://e' || i || '.test/', 's', '', CASE WHEN i = 1 THEN '' ELSE 'client-' || i END, ? FROM n`,
		`INSERT INTO payment_events (seq, type, at, idempotency_key, payment_id, client_id, payment_key, amount_minor, currency,
			method, payment_created_at, status, captured_minor, refunded_minor, replay_count, rejected_count)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
		SELECT i, 'PAYMENT_CREATED', ?, 'k' || i, 'pay_' || (i % 3000), 'client-' || (i % 3000 % 40), 'k', 100, 'BRL',
			'PIX', ?, 'CAPTURED', 100, 0, 0, 0 FROM n`,
		`INSERT INTO webhook_deliveries (event_id, event_seq, endpoint_id, payment_id, client_id, status, event_at, created_at,
			attempts, retries, next_attempt_at, claim_token, last_status, last_error)
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
		SELECT i / 5 + 1, i / 5 + 1, 'we_' || (i % 5 + 1), 'pay_' || ((i / 5 + 1) % 3000), 'client-' || ((i / 5 + 1) % 3000 % 40),
			CASE WHEN i % 200 = 7 THEN 'FAILED' WHEN i % 500 = 9 THEN 'CANCELED' WHEN i > 48500 THEN 'PENDING' ELSE 'DELIVERED' END,
			?, ?, 1, 0, ?, 0, 200, '' FROM n`,
	} {
		args := []any{at}
		switch strings.Count(q, "?") {
		case 2:
			args = []any{at, at}
		case 3:
			args = []any{at, at, at}
		}
		if err := db.Gorm.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	if db.Dialect == "postgres" {
		if err := db.Gorm.Exec("ANALYZE").Error; err != nil {
			t.Fatal(err)
		}
	}
}

// explain is the plan of the store's statement name with args, one line
// a step.
func explain(t *testing.T, db dbtest.DB, st shared, name string, args ...any) string {
	t.Helper()
	return dbtest.Plan(t, db, st.q.SQL(name), args...)
}

// TestDeliveryListsUseTheirIndexes: at 50,000 deliveries, each filter's
// statement reads through its index on both databases (SQLite without
// statistics, PostgreSQL after ANALYZE), stopping at the page's end: never
// a scan of every delivery, and never payment_events, whose rows a
// request writes. By payment and by a FAILED or CANCELED status both
// databases must use the filter's index; by endpoint or client PostgreSQL
// may walk the primary key instead, and a DELIVERED or PENDING page has no
// index of its own.
func TestDeliveryListsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		seedMany(t, db)
		var st shared
		switch s := openStore(t, db).(type) {
		case *postgresStore:
			st = s.shared
		case *sqliteStore:
			st = s.shared
		}
		for _, c := range []struct {
			name                  string
			status, endpoint, pay string
			client                string
			want                  string // in the plan on both databases
			wantSQLite            string // in SQLite's plan
		}{
			{"deliveries_all_older", "", "", "", "", "", ""},
			{"deliveries_all_newer", "", "", "", "", "", ""},
			{"deliveries_all_older", "DELIVERED", "", "", "", "", ""},
			{"deliveries_all_newer", "PENDING", "", "", "", "", ""},
			{"deliveries_by_failed_older", "FAILED", "", "", "", "idx_webhook_deliveries_failed", ""},
			{"deliveries_by_failed_newer", "CANCELED", "", "", "", "idx_webhook_deliveries_failed", ""},
			{"deliveries_by_failed_older", "FAILED", "we_3", "", "client-7", "idx_webhook_deliveries_failed", ""},
			{"deliveries_by_endpoint_older", "", "we_3", "", "", "", "idx_webhook_deliveries_endpoint"},
			{"deliveries_by_endpoint_newer", "DELIVERED", "we_3", "", "", "", "idx_webhook_deliveries_endpoint"},
			{"deliveries_by_payment_older", "", "", "pay_17", "", "idx_webhook_deliveries_payment", ""},
			{"deliveries_by_payment_newer", "", "we_1", "pay_17", "", "idx_webhook_deliveries_payment", ""},
			{"deliveries_by_client_older", "", "", "", "client-7", "", "idx_webhook_deliveries_client"},
			{"deliveries_by_client_newer", "DELIVERED", "", "", "client-7", "", "idx_webhook_deliveries_client"},
		} {
			from := maxDeliveryID
			if strings.HasSuffix(c.name, "_newer") {
				from = 1000
			}
			plan := explain(t, db, st, c.name, c.status, c.endpoint, c.pay, c.client, from, 51)
			t.Logf("%s %q %q %q %q:\n%s", c.name, c.status, c.endpoint, c.pay, c.client, plan)
			if c.want != "" && !strings.Contains(plan, c.want) {
				t.Errorf("%s: plan lacks %s:\n%s", c.name, c.want, plan)
			}
			if c.wantSQLite != "" && db.Dialect == "sqlite" && !strings.Contains(plan, c.wantSQLite) {
				t.Errorf("%s: plan lacks %s:\n%s", c.name, c.wantSQLite, plan)
			}
			// PostgreSQL may sort a payment's few deliveries; SQLite, with
			// no statistics, must follow the index's order.
			if strings.Contains(plan, "payment_events") || strings.Contains(plan, "USE TEMP B-TREE") {
				t.Errorf("%s: reads the events or sorts the deliveries:\n%s", c.name, plan)
			}
			for _, line := range strings.Split(plan, "\n") {
				if strings.Contains(line, "Seq Scan") || strings.HasPrefix(strings.TrimSpace(line), "SCAN ") {
					t.Errorf("%s: reads a whole table:\n%s", c.name, plan)
				}
			}
		}
	})
}
