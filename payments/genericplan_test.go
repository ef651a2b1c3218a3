package payments

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/load"
)

// planRuns is how many requests of each kind the plan tests send, one at a
// time: PostgreSQL plans a prepared statement's first five runs for their
// arguments (custom plans), then chooses, so the runs after the fifth show
// its choice.
const planRuns = 12

// preparedPlans is a prepared statement's count of plans of each kind
// (pg_prepared_statements, PostgreSQL 14+).
type preparedPlans struct {
	statement       string
	generic, custom int64
}

// The batch statements, and every other statement prepared on the
// connection that serves requests, run on PostgreSQL's generic plan once
// it has chosen: with one request a statement (a server at low load), a
// custom plan made for every run costs a batch statement two to five
// times what running it does
// (docs/benchmarks/2026-12-07-captures-and-refunds-on-epyc.md). Each
// batch statement reads its first array through a sub-select, so that a
// plan for a small batch is estimated no cheaper than the generic one
// (docs/design/idempotency.md); this test says whether that still holds
// after an edit. SQLite has no plan cache that chooses between the two.
func TestStatementsKeepGenericPlans(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		if db.Dialect == "sqlite" {
			t.Skip("SQLite has no plan cache choosing between generic and custom plans: nothing to check")
		}
		for _, p := range customPlanned(planOneByOne(t, db, "")) {
			t.Errorf("%s: %d custom plans and %d generic after %d runs, want the generic plan from the sixth",
				statementName(p.statement), p.custom, p.generic, p.custom+p.generic)
		}
	})
}

// The check fails for each batch statement when the statements are
// planned for their arguments every time, as a statement PostgreSQL no
// longer keeps on its generic plan would be.
func TestGenericPlanCheckSeesCustomPlans(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	seen := map[string]bool{}
	for _, p := range customPlanned(planOneByOne(t, db, "force_custom_plan")) {
		seen[p.statement] = true
	}
	for name, q := range batchStatements() {
		if !seen[q] {
			t.Errorf("%s ran on custom plans but the check let it pass", name)
		}
	}
}

// batchStatements are the batched statements, by name, as they are sent.
func batchStatements() map[string]string {
	return map[string]string{"create_batch": CreateBatchSQL, "change_batch": ChangeBatchSQL,
		"settle_create_batch": postgresSQL.SQL("settle_create_batch"), "record_batch": postgresSQL.SQL("record_batch")}
}

// statementName is a batch statement's name, or the start of another's text.
func statementName(q string) string {
	for name, batch := range batchStatements() {
		if q == batch {
			return name
		}
	}
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 80 {
		q = q[:80] + "…"
	}
	return q
}

// customPlanned are the statements of plans that ran more than five times
// and were planned for their arguments after the fifth.
func customPlanned(plans []preparedPlans) []preparedPlans {
	var out []preparedPlans
	for _, p := range plans {
		if p.custom > 5 {
			out = append(out, p)
		}
	}
	return out
}

// seedForPlans stores payments and analyzes the tables, so that the plans
// are chosen as on a database in use: on empty tables, never analyzed,
// record_batch kept its generic plan where with a few thousand payments it
// was planned for every run, and the cost of change_batch's generic plan
// comes near its plateau from about 10,000.
func seedForPlans(t *testing.T, db dbtest.DB) {
	t.Helper()
	if _, err := load.SeedPayments(db.Gorm, load.Capture, "pay_plan_a", 10000); err != nil {
		t.Fatal(err)
	}
	if _, err := load.SeedPayments(db.Gorm, load.Refund, "pay_plan_c", 1000); err != nil {
		t.Fatal(err)
	}
	err := db.Gorm.Exec("ANALYZE payments, idempotency_keys, idempotency_attempts, refunds, processor_calls, " +
		"processor_operations, payment_events").Error
	if err != nil {
		t.Fatal(err)
	}
}

// planOneByOne sends planRuns creates at the sandbox and at a processor
// asked in phases (Stripe's double), captures, refunds and refused
// captures, one at a time, on a pool of one connection with planCacheMode
// set ("" for PostgreSQL's default), and returns the plans of every
// statement prepared on it. It fails the test if a batch statement was not
// prepared, or ran fewer times than requests were sent.
func planOneByOne(t *testing.T, db dbtest.DB, planCacheMode string) []preparedPlans {
	t.Helper()
	seedForPlans(t, db)
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	// One connection, kept for the whole test: the plans are its session's.
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxIdleTime(0)
	sqlDB.SetConnMaxLifetime(0)
	backend := func() (pid int64) {
		if err := sqlDB.QueryRowContext(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		return pid
	}
	pid := backend()
	if planCacheMode != "" {
		if _, err := sqlDB.ExecContext(t.Context(), "SET plan_cache_mode = "+planCacheMode); err != nil {
			t.Fatal(err)
		}
	}
	sandboxed, err := NewService(db.Gorm, Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, _ := doubledStripe(t)
	phased, err := NewService(db.Gorm, Config{Processor: conn, ProcessorTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range planRuns {
		sendEachKind(t, sandboxed, phased, i)
	}
	if backend() != pid {
		t.Fatal("the pool's connection changed during the test: its plans are not the ones counted")
	}
	rows, err := sqlDB.QueryContext(t.Context(), "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plans []preparedPlans
	byText := map[string]preparedPlans{}
	for rows.Next() {
		var p preparedPlans
		if err := rows.Scan(&p.statement, &p.generic, &p.custom); err != nil {
			t.Fatal(err)
		}
		plans = append(plans, p)
		byText[p.statement] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, q := range batchStatements() {
		p, ok := byText[q]
		if !ok {
			t.Fatalf("%s was not prepared on the connection", name)
		}
		if p.generic+p.custom < planRuns {
			t.Fatalf("%s ran %d times, want at least %d", name, p.generic+p.custom, planRuns)
		}
	}
	return plans
}

// sendEachKind sends, with keys of round i, one request of each kind that
// runs a batch statement: a create at the sandbox (create_batch), its
// capture and a refund (change_batch), a capture again under another key,
// which the rules refuse (record_batch), and a create asked at phased's
// processor (settle_create_batch) and its capture, asked there too (the
// statements of changes.go).
func sendEachKind(t *testing.T, sandboxed, phased *Service, i int) {
	t.Helper()
	ctx, origin, no := t.Context(), Origin{Transport: "test"}, false
	key := func(what string) string { return fmt.Sprintf("%s-%d", what, i) }
	created, err := sandboxed.Create(ctx, CreateRequest{ClientID: "c", IdempotencyKey: key("create"), Amount: "10.00",
		Currency: "BRL", Method: MethodCreditCard, Capture: &no, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	id, some := created.Payment.ID, "1.00"
	if _, err := sandboxed.Capture(ctx, CaptureRequest{PaymentID: id, IdempotencyKey: key("capture"), Origin: origin}); err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxed.Refund(ctx, RefundRequest{PaymentID: id, Amount: &some, IdempotencyKey: key("refund"),
		Origin: origin}); err != nil {
		t.Fatal(err)
	}
	_, err = sandboxed.Capture(ctx, CaptureRequest{PaymentID: id, IdempotencyKey: key("again"), Origin: origin})
	var refused *StateConflictError
	if !errors.As(err, &refused) {
		t.Fatalf("capturing a captured payment: %v, want a refusal", err)
	}
	tok := "pm_card_visa"
	asked, err := phased.Create(ctx, CreateRequest{ClientID: "c", IdempotencyKey: key("phased"), Amount: "10.00",
		Currency: "BRL", Method: MethodCreditCard, PaymentMethodToken: &tok, Capture: &no, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := phased.Capture(ctx, CaptureRequest{PaymentID: asked.Payment.ID, IdempotencyKey: key("phased-capture"),
		Origin: origin}); err != nil {
		t.Fatal(err)
	}
}
