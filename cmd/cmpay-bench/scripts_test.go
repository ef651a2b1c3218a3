package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/load"
	"github.com/cmpay/cmpay/payments"
)

// The stored payments are what the server would have stored: a retry of
// any of their creates replays, whether it comes through the server or
// through its statement under pgbench.
func TestSeedReplays(t *testing.T) {
	db := dbtest.Postgres(t)
	seed(db.Gorm, 20)
	svc, err := payments.NewService(db.Gorm, payments.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ client, key, amount, id string }{
		{"seed-5", "seed-5", "10.05", "pay_seed_5"},   // 1000 + 5 minor units
		{"seed-10", "seed-10", "10.1", "pay_seed_10"}, // reduced: "10.1"
		{"pgbench", "r7", "10.00", "pay_pgbench_7"},
	} {
		res, err := svc.Create(context.Background(), payments.CreateRequest{ClientID: tt.client, Amount: tt.amount,
			Currency: "BRL", Method: payments.MethodPix, IdempotencyKey: tt.key})
		if err != nil {
			t.Fatalf("%s: %v", tt.key, err)
		}
		if !res.Replayed || res.Payment.ID != tt.id || res.Payment.Status != payments.StatusCaptured ||
			res.Payment.Captured != res.Payment.Amount {
			t.Errorf("%s: %+v, want a replay of the captured payment %s", tt.key, res, tt.id)
		}
	}
}

// Each pgbench script does the work it stands for: run for a few
// transactions, it leaves the rows a request would.
func TestPgbenchScriptsDoTheirWork(t *testing.T) {
	db := dbtest.Postgres(t)
	seed(db.Gorm, 10)
	for _, s := range []struct {
		prefix string
		mode   load.Mode
		n      int
	}{
		{limitCapturePrefix, load.Capture, capturePayments(2, 3)},
		{serverCapturePrefix, load.Capture, capturePayments(2, 3)},
		{pgbenchRefundPrefix, load.Refund, refundPayments},
	} {
		if _, err := load.SeedPayments(db.Gorm, s.mode, s.prefix, s.n); err != nil {
			t.Fatal(err)
		}
	}
	bin := pgBin(t)
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.Gorm.Raw(query, args...).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Two clients, three transactions each.
	const want = 6
	for _, tt := range []struct {
		name, script string
		first        bool // starts nextPayment's counter
		check        string
	}{
		{"limit-new", limitNewSQL, false,
			`SELECT COUNT(*) FROM payments p JOIN idempotency_attempts a ON a.payment_id = p.id AND a.outcome = 'CREATED'
			 WHERE p.client_id = 'pgbench' AND p.id LIKE 'p%-%' AND p.status = 'CAPTURED' AND p.captured_minor = 1000`},
		{"limit-replay", limitReplaySQL, false,
			`SELECT COUNT(*) FROM idempotency_attempts WHERE outcome = 'REPLAYED' AND transport = 'pgbench'`},
		{"server-new", serverCreateSQL(false), false,
			`SELECT COUNT(*) FROM payments p JOIN idempotency_attempts a ON a.payment_id = p.id AND a.outcome = 'CREATED'
			 WHERE p.client_id = 'pgbench' AND p.id LIKE 'p%-%' AND p.status = 'CAPTURED' AND a.transport = 'pgbench'`},
		{"server-replay", serverCreateSQL(true), false,
			// the statement counts a replay on the payment only if it
			// took it for one: the fingerprints agree
			`SELECT COALESCE(SUM(replay_count), 0) FROM payments WHERE id LIKE 'pay_pgbench_%'`},
		{"limit-capture", limitCaptureSQL(2), true,
			`SELECT COUNT(*) FROM payments p JOIN idempotency_attempts a ON a.payment_id = p.id AND a.outcome = 'APPLIED'
			 WHERE p.id LIKE 'pay_lc_%' AND p.status = 'CAPTURED' AND p.captured_minor = p.amount_minor AND p.captured_at IS NOT NULL`},
		{"server-capture", serverChangeSQL(false, 2), true,
			`SELECT COUNT(*) FROM payments p JOIN idempotency_attempts a ON a.payment_id = p.id AND a.outcome = 'APPLIED'
			 WHERE p.id LIKE 'pay_sc_%' AND p.status = 'CAPTURED' AND p.captured_minor = p.amount_minor AND p.captured_at IS NOT NULL`},
		{"limit-refund", limitRefundSQL, false,
			`SELECT COUNT(*) FROM refunds r JOIN idempotency_attempts a ON a.refund_id = r.id AND a.outcome = 'APPLIED'
			 WHERE r.id LIKE 'ref\_l%' AND r.amount_minor = 1`},
		{"server-refund", serverChangeSQL(true, 2), false,
			`SELECT COUNT(*) FROM refunds r JOIN idempotency_attempts a ON a.refund_id = r.id AND a.outcome = 'APPLIED'
			 WHERE r.id LIKE 'ref\_s%' AND r.amount_minor = 1`},
	} {
		before := count(tt.check)
		path := filepath.Join(t.TempDir(), tt.name+".sql")
		if err := os.WriteFile(path, []byte(tt.script), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-n", "-M", "prepared", "-c", "2", "-t", "3", "-f", path}
		if tt.first {
			args = append(args, "-D", "i=0")
		}
		out, err := exec.Command(filepath.Join(bin, "pgbench"), append(args, pgbenchURL(db.URL))...).CombinedOutput()
		if err != nil || strings.Contains(string(out), "error") {
			t.Fatalf("%s: %v\n%s", tt.name, err, out)
		}
		if got := count(tt.check) - before; got != want {
			t.Errorf("%s: did the work of %d requests in %d transactions", tt.name, got, want)
		}
	}
	// Refunds of 0.01 from the captured payments, twelve in all.
	if got := count(`SELECT COALESCE(SUM(refunded_minor), 0) FROM payments WHERE id LIKE 'pay_lr_%'`); got != 2*want {
		t.Errorf("refunded %d minor units, want %d", got, 2*want)
	}
}

func TestStripComments(t *testing.T) {
	got := stripComments("SELECT 1 -- it's one\n, '--not' -- x: y\nFROM t")
	if want := "SELECT 1 \n, '--not' \nFROM t"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// pgbenchURL is a dbtest URL as pgbench takes it: the schema in options,
// as the benchmark passes it; libpq knows no search_path parameter.
func pgbenchURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return withParam(u.String(), "options", "-csearch_path="+schema)
}

// pgBin is the PostgreSQL programs' directory: CMPAY_PG_BIN, which the
// scripts set, or the newest installed.
func pgBin(t *testing.T) string {
	if bin := os.Getenv("CMPAY_PG_BIN"); bin != "" {
		return bin
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(found)
	if len(found) == 0 {
		t.Fatal("no pgbench: set CMPAY_PG_BIN or run ./scripts/test.sh, which installs PostgreSQL")
	}
	return found[len(found)-1]
}
