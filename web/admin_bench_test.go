package web

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// BenchmarkAdminPages times the admin pages' server work (queries and
// rendering, through the real handler) against PostgreSQL holding
// CMPAY_BENCH_PAYMENTS payments (default 1,000,000): a year of traffic from
// about 10,000 clients, one of whom has a tenth of all payments, about 5%
// of keys replayed or rejected, and an attempt row for every request.
//
//	./scripts/bench-admin.sh
func BenchmarkAdminPages(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("CMPAY_BENCH_PAYMENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	db := dbtest.Postgres(b)
	start := time.Now()
	seedPayments(b, db, n)
	b.Logf("seeded %d payments in %s", n, time.Since(start).Round(time.Second))

	svc, err := payments.NewService(db.Gorm, payments.Config{})
	if err != nil {
		b.Fatal(err)
	}
	h := Admin(svc)
	// A payment of the big client with a replay and a rejection.
	var busy string
	db.Gorm.Raw(`SELECT id FROM payments WHERE client_id = 'big-client' AND replay_count > 0 AND rejected_count > 0 ORDER BY created_at DESC LIMIT 1`).Scan(&busy)
	var cursor string
	{
		page, err := svc.List(b.Context(), payments.Filter{}, adminPageSize, "")
		if err != nil {
			b.Fatal(err)
		}
		cursor = page.EndCursor()
	}

	for _, page := range []struct{ name, path string }{
		{"list", "/admin"},
		{"list-page-2", "/admin?after=" + cursor},
		{"flagged", "/admin?flagged=1"},
		{"replayed", "/admin?replayed=1"},
		{"rejected", "/admin?rejected=1"},
		{"by-client-small", "/admin?client=client-42"},
		{"by-client-100k", "/admin?client=big-client"},
		{"by-client-100k-flagged", "/admin?client=big-client&flagged=1"},
		{"by-key", "/admin?key=key-500000"},
		{"search", "/admin?q=big-client"},
		{"date-range", "/admin?from=" + time.Now().AddDate(0, -3, 0).Format(time.DateOnly) + "&to=" + time.Now().AddDate(0, -2, 0).Format(time.DateOnly)},
		{"payment", "/admin/payments/" + busy},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", page.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", page.path, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 300)])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
	// The list pages reuse the last-24-hours overview for statsTTL; this is
	// what computing it costs when the cache has expired.
	b.Run("stats-24h-uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.RecentStats(b.Context(), 24); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
	})
}

// seedPayments fills the payments and attempts tables with generate_series
// in a few statements, then refreshes the planner's statistics.
func seedPayments(b *testing.B, db dbtest.DB, n int) {
	b.Helper()
	for _, stmt := range []string{
		`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, replay_count, rejected_count, replayed_at, rejected_at)
		 SELECT 'pay_bench_' || lpad(g::text, 8, '0'),
		        CASE WHEN g % 10 = 0 THEN 'big-client' ELSE 'client-' || (g % 9973) END,
		        'key-' || g,
		        100 + (g::bigint * 7919) % 100000,
		        (ARRAY['BRL','USD','EUR','JPY'])[1 + g % 4],
		        (ARRAY['CREDIT_CARD','DEBIT_CARD','PIX','BOLETO'])[1 + (g / 4) % 4],
		        now() - g * (interval '365 days' / ?),
		        CASE WHEN g % 33 = 0 THEN 1 + g % 3 ELSE 0 END,
		        CASE WHEN g % 50 = 0 THEN 1 ELSE 0 END,
		        CASE WHEN g % 33 = 0 THEN now() - g * (interval '365 days' / ?) + interval '1 second' END,
		        CASE WHEN g % 50 = 0 THEN now() - g * (interval '365 days' / ?) + interval '5 seconds' END
		 FROM generate_series(1, ?) g`,
		`INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
		 SELECT id, 'CREATED', created_at, '', 'graphql' FROM payments`,
		`INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
		 SELECT id, 'REPLAYED', created_at + s * interval '1 second', '', 'rest'
		 FROM payments, generate_series(1, replay_count) s WHERE replay_count > 0`,
		`INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport)
		 SELECT id, 'REJECTED', created_at + interval '5 seconds', 'amount', amount_minor + 100, currency, method, 'graphql'
		 FROM payments WHERE rejected_count > 0`,
		`ANALYZE`,
	} {
		args := []any{}
		if len(stmt) > 20 && stmt[:20] == `INSERT INTO payments` {
			args = []any{n, n, n, n}
		}
		if err := db.Gorm.Exec(stmt, args...).Error; err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
}
