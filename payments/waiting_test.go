package payments_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// WaitingOperation lists the payments with a capture, cancel or refund
// the processor has not settled, and lets them go once it has: the
// overview counted them ("3 captures, cancels and refunds waiting for the
// processor") with no way to see which.
func TestListWaitingOperations(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		capturing := stripeCard(t, b, "capturing", false)
		refunding := stripeCard(t, b, "refunding", true)
		settled := stripeCard(t, b, "settled", true)
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if res, err := b.capture(t, capturing.ID, "cap", nil); err != nil || res.Payment.PendingOperation != payments.OpCapture {
			t.Fatalf("capture: %+v, %v; want it pending", res.Payment, err)
		}
		d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if res, err := b.refund(t, refunding.ID, "ref", ptr("1.00")); err != nil || res.Refund == nil ||
			res.Refund.Status != payments.RefundProcessing {
			t.Fatalf("refund: %+v, %v; want it PROCESSING", res.Refund, err)
		}
		if _, err := b.refund(t, settled.ID, "ref-ok", ptr("1.00")); err != nil {
			t.Fatal(err)
		}
		waiting := payments.Filter{WaitingOperation: true}
		checkListings(t, b.svc, []listing{
			{"waiting for the processor", waiting, []payments.Payment{refunding, capturing}},
			{"waiting, of another client", payments.Filter{WaitingOperation: true, ClientID: "client-2"}, nil},
			{"waiting and AUTHORIZED", payments.Filter{WaitingOperation: true, Status: payments.StatusAuthorized},
				[]payments.Payment{capturing}},
		})
		recoverUntil(t, b, capturing.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
		recoverUntil(t, b, refunding.ID, func(p payments.Payment) bool { return p.Reserved.Minor == 0 })
		checkListings(t, b.svc, []listing{{"once settled", waiting, nil}})
	})
}

// The list of payments waiting for the processor reads its partial index
// newest first, without a sort, among many payments of which a few wait:
// one statement per page whatever the table's size. PostgreSQL's planner
// weighs the rows, so it gets 50,000; SQLite gets 10,000 (50,000 took it
// 13 s under the race detector, and chose the same plan).
func TestWaitingOperationsPlan(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		n := 50_000
		if db.Dialect == "sqlite" {
			n = 10_000
		}
		seedPayments(t, db, n)
		if err := db.Gorm.Exec(`UPDATE payments SET pending_operation = 'CAPTURE_PAYMENT' WHERE id LIKE 'pay_seed10%' AND length(id) = 12`).Error; err != nil {
			t.Fatal(err) // pay_seed1000 … pay_seed1099
		}
		if err := db.Gorm.Exec(`UPDATE payments SET pending_operation = 'CANCEL_PAYMENT', reserved_minor = 1 WHERE id IN ('pay_seed7', 'pay_seed42')`).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm.Exec(`ANALYZE`).Error; err != nil {
			t.Fatal(err)
		}
		query, args, err := payments.PageSQL(payments.Filter{WaitingOperation: true}, 21)
		if err != nil {
			t.Fatal(err)
		}
		// Its only argument, the page size, written in: EXPLAIN takes no
		// named arguments through database/sql on PostgreSQL.
		query = regexp.MustCompile(`@page_size\b`).ReplaceAllString(query, strconv.Itoa(args["page_size"].(int)))
		text := dbtest.Plan(t, db, query)
		sorted := strings.Contains(text, "Sort") || strings.Contains(text, "TEMP B-TREE")
		if !strings.Contains(text, "idx_payments_waiting_op") || sorted {
			t.Errorf("%s plan:\n%s\nwant idx_payments_waiting_op and no sort", db.Dialect, text)
		}
		t.Logf("%s plan:\n%s", db.Dialect, text)
	})
}

// seedPayments stores n authorized payments, pay_seed1 to pay_seedN, in
// one statement: the rows alone, without the keys and attempts that
// load.SeedPayments adds, which took SQLite 20 s for 50,000 under the
// race detector.
func seedPayments(t *testing.T, db dbtest.DB, n int) {
	t.Helper()
	series := "generate_series(1, @n) AS g(i)"
	if db.Dialect == "sqlite" {
		series = "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < @n) SELECT i FROM s) AS g"
	}
	err := db.Gorm.Exec(`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
		status, captured_minor, refunded_minor, replay_count, rejected_count)
		SELECT 'pay_seed' || i, 'seed', 'pay_seed' || i, 1000, 'BRL', 'PIX', @at, 'AUTHORIZED', 0, 0, 0, 0 FROM `+series,
		map[string]any{"n": n, "at": time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}).Error
	if err != nil {
		t.Fatalf("seed %d payments: %v", n, err)
	}
}
