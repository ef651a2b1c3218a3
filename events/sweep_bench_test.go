package events_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// BenchmarkSweepKeptFailed: one sweep on PostgreSQL while an endpoint that
// failed everything has 50,000 FAILED deliveries (made two days ago, last
// tried a day ago), each of its own event, ten events a numbering pass,
// with WEBHOOK_FAILED_KEEP a week (all kept) and an hour (none kept): the
// wall time of a sweep after the first (which deletes what it may), and
// the rows it read from the deliveries, attempts, events and passes
// tables (pg_stat_user_tables: sequential reads plus index fetches).
// Seeded by SQL, so that it runs at an older commit too: a delivery gets
// a body where the schema has the column.
//
//	go test -run '^$' -bench SweepKeptFailed -benchtime 5x ./events/
func BenchmarkSweepKeptFailed(b *testing.B) {
	for _, keep := range []time.Duration{168 * time.Hour, time.Hour} {
		b.Run("keep="+keep.String(), func(b *testing.B) { benchmarkSweep(b, keep) })
	}
}

// benchmarkSweep measures BenchmarkSweepKeptFailed's sweep with the keep
// given: a week keeps every delivery, an hour (the retention) none.
func benchmarkSweep(b *testing.B, keep time.Duration) {
	db := dbtest.Postgres(b)
	const n = 50_000
	now := time.Now().UTC().Truncate(time.Microsecond)
	made, last := now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	exec := func(q string, args ...any) {
		b.Helper()
		if err := db.Gorm.Exec(q, args...).Error; err != nil {
			b.Fatal(err)
		}
	}
	exec(`INSERT INTO webhook_endpoints (id, url, secret, event_types, client_id, created_at)
		VALUES ('we_dead', 'https://dead.test/', 's', '', '', ?)`, made)
	exec(`INSERT INTO payment_events (seq, type, at, idempotency_key, payment_id, client_id, payment_key, amount_minor,
			currency, method, payment_created_at, status, captured_minor, refunded_minor, replay_count, rejected_count)
		SELECT i, 'PAYMENT_CREATED', ?, 'k' || i, 'pay_' || i, 'shop', 'k' || i, 100, 'BRL', 'PIX', ?, 'CAPTURED', 100, 0, 0, 0
		FROM generate_series(1, ?) AS i`, made, made, n+10)
	exec(`INSERT INTO event_batches (last_id, first_id, seqs)
		SELECT g * 10, g * 10 - 9, ARRAY(SELECT generate_series(g * 10 - 9, g * 10)::bigint) FROM generate_series(1, ?) AS g`, n/10+1)
	exec(`UPDATE payment_events SET at = ? WHERE seq > ?`, now, n) // the newest pass: young
	exec(`INSERT INTO webhook_deliveries (id, event_id, event_seq, endpoint_id, payment_id, client_id, status, event_at,
			created_at, attempts, retries, next_attempt_at, claim_token, last_attempt_at, last_status, last_error)
		SELECT i, i, i, 'we_dead', 'pay_' || i, 'shop', 'FAILED', ?, ?, 20, 20, ?, 0, ?, 500, 'down'
		FROM generate_series(1, ?) AS i`, made, made, last, last, n)
	// Ids given by the seed, as inserts would have taken them from the
	// sequence: a frontier past the sequence's last value sends the walk
	// back to 0 (sql/postgres.sql delivery_sweep_frontier).
	exec(`SELECT setval(pg_get_serial_sequence('webhook_deliveries', 'id'), ?)`, n)
	exec(`INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms)
		SELECT id, last_attempt_at, 500, 'down', 3 FROM webhook_deliveries`)
	if db.Gorm.Migrator().HasColumn("webhook_deliveries", "body") {
		exec(`UPDATE webhook_deliveries SET body = '{"id":"' || event_id || '","type":"PAYMENT_CREATED"}'`)
	}
	exec(`ANALYZE`)

	ev, err := events.New(db.Gorm, events.Options{Retention: time.Hour, FailedKeep: keep,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ev.Sweep(b.Context()); err != nil {
		b.Fatal(err)
	}
	var left int64
	db.Gorm.Raw(`SELECT count(*) FROM webhook_deliveries WHERE status = 'FAILED'`).Scan(&left)
	if want := map[bool]int64{true: n, false: 0}[keep > 24*time.Hour]; left != want {
		b.Fatalf("%d FAILED deliveries left after the first sweep; want %d", left, want)
	}
	// reads is the rows read so far from the four tables. An idle backend
	// reports its counts within PGSTAT_IDLE_INTERVAL (10 s): wait for them.
	reads := func() int64 {
		time.Sleep(11 * time.Second)
		var r int64
		db.Gorm.Raw(`SELECT pg_stat_clear_snapshot()`).Row()
		db.Gorm.Raw(`SELECT COALESCE(sum(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)), 0) FROM pg_stat_user_tables
			WHERE schemaname = current_schema()
				AND relname IN ('webhook_deliveries', 'payment_events', 'event_batches', 'webhook_attempts')`).Scan(&r)
		return r
	}
	before := reads()
	var took time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := ev.Sweep(b.Context()); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.StopTimer()
	after := reads()
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/sweep")
	b.ReportMetric(float64(after-before)/float64(b.N), "rows-read/sweep")
}
