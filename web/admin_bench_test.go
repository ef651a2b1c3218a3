package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

// BenchmarkAdminPages times the admin pages' server work (the session
// check, queries and rendering, through the real handler) against PostgreSQL holding
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
	h, cookie := benchAdmin(b, db, svc)
	seedAudit(b, db)
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
		{"audit", "/admin/audit"},
		{"audit-refunds", "/admin/audit?action=refund"},
		{"audit-one-staff", "/admin/audit?actor=staff-7"},
		{"audit-sign-ins-one-day", "/admin/audit?action=sign-in&from=" + time.Now().AddDate(0, 0, -30).Format(time.DateOnly) + "&to=" + time.Now().AddDate(0, 0, -30).Format(time.DateOnly)},
		{"staff", "/admin/staff"},
	} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest("GET", page.path, nil)
				req.AddCookie(cookie) // every page checks the session, as in production
				h.ServeHTTP(rec, req)
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

// benchAdmin is the admin UI over db with a signed-in admin: the handler
// and the session cookie to send.
func benchAdmin(b *testing.B, db dbtest.DB, svc *payments.Service) (http.Handler, *http.Cookie) {
	b.Helper()
	st := staff.New(db.Gorm, staff.Config{})
	b.Cleanup(st.Close) // a run past a minute writes the session's last use beside its pages
	if _, err := st.Bootstrap(b.Context(), "admin", "bench-admin-password"); err != nil {
		b.Fatal(err)
	}
	token, _, err := st.SignIn(b.Context(), staff.SignInRequest{Username: "admin", Password: "bench-admin-password", Address: "127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	return Admin(AdminDeps{Payments: svc, Staff: st}), &http.Cookie{Name: sessionCookie, Value: token}
}

// BenchmarkAdminExport downloads the CSV export of every payment (and of
// big-client's 100,000) over HTTP from the real handler, with PostgreSQL
// holding CMPAY_BENCH_PAYMENTS payments (default 1,000,000), and reports
// rows per second and this process's resident memory (VmRSS, sampled every
// 50,000 rows: server and client are both in it). One download per
// sub-benchmark whatever b.N: run it with -benchtime 1x.
//
//	./scripts/bench-admin.sh
func BenchmarkAdminExport(b *testing.B) {
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
	h, cookie := benchAdmin(b, db, svc)
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, tt := range []struct {
		name, path string
		rows       int
	}{
		{"all", "/admin/payments.csv", n},
		{"big-client", "/admin/payments.csv?client=big-client", n / 10},
	} {
		b.Run(tt.name, func(b *testing.B) {
			runtime.GC()
			req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
			req.AddCookie(cookie)
			began := time.Now()
			res, err := srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("%s: %d", tt.path, res.StatusCode)
			}
			firstByte := time.Since(began)
			rss := []int{rssMB()}
			rows, buf := -1, make([]byte, 64<<10) // the header is not a row
			for {
				k, err := res.Body.Read(buf)
				for _, c := range buf[:k] {
					if c == '\n' {
						if rows++; rows%50_000 == 0 {
							rss = append(rss, rssMB())
						}
					}
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(began)
			if rows != tt.rows {
				b.Fatalf("%d rows, want %d", rows, tt.rows)
			}
			b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
			b.ReportMetric(float64(slices.Max(rss)), "max-RSS-MB")
			b.ReportMetric(float64(rss[0]), "start-RSS-MB")
			b.Logf("%s: %d rows in %s (first byte after %s); RSS MB every 50,000 rows: %v",
				tt.name, rows, took.Round(time.Millisecond), firstByte.Round(time.Millisecond), rss)
		})
	}
}

// seedAudit gives the audit log a year of a busy support team: 50 staff,
// 200,000 entries of their own (sign-ins, exports, …) and 20,000 captures
// and refunds made in the admin among the payments' attempts.
func seedAudit(b *testing.B, db dbtest.DB) {
	b.Helper()
	for _, stmt := range []string{
		`INSERT INTO staff_accounts (username, role, password_hash, created_at, updated_at, password_changed_at)
		 SELECT 'staff-' || g, (ARRAY['viewer','operator','admin'])[1 + g % 3], 'x', now(), now(), now() FROM generate_series(1, 50) g`,
		`INSERT INTO staff_audit (at, actor, address, action, target, outcome, detail)
		 SELECT now() - g * interval '150 seconds', 'staff-' || (g % 50), '10.0.0.' || (g % 50),
		        (ARRAY['sign-in','sign-out','export','sign-in','password.change'])[1 + g % 5], 'staff-' || (g % 50),
		        CASE WHEN g % 17 = 0 THEN 'failed' ELSE 'ok' END, ''
		 FROM generate_series(1, 200000) g`,
		`INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport, actor, actor_address, differing_fields)
		 SELECT id, (ARRAY['REFUND_PAYMENT','CAPTURE_PAYMENT'])[1 + (row_number() OVER ()) % 2], 'admin-' || id, 'APPLIED', created_at + interval '1 hour',
		        '{"amount":"1"}', 'admin', 'staff-' || ((row_number() OVER ()) % 50), '10.0.0.1', ''
		 FROM payments WHERE client_id <> 'big-client' AND replay_count = 0 ORDER BY created_at DESC LIMIT 20000`,
		`ANALYZE`,
	} {
		if err := db.Gorm.Exec(stmt).Error; err != nil {
			b.Fatalf("seed audit: %v", err)
		}
	}
}

// rssMB is this process's resident set size in MB, from /proc.
func rssMB() int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return kb / 1024
		}
	}
	return -1
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
