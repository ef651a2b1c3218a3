package payments_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// attemptCounter counts what OnAttempt is told, by operation, outcome and
// transport.
type attemptCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *attemptCounter) on(op payments.Operation, o payments.Outcome, transport string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[fmt.Sprintf("%s %s %s", op, o, transport)]++
}

func (c *attemptCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// A capture, cancel or refund the processor refuses, at once or (a refund)
// later, is recorded as a REFUSED attempt with refusal PROCESSOR_REFUSED,
// not APPLIED, and counted refused; its replays stay REPLAYED. The admin's
// attempts, append-only otherwise, take that change too. A change the
// processor applies stays APPLIED and is counted once.
func TestProcessorRefusalsAreRefusedAttempts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		counts := &attemptCounter{n: map[string]int{}}
		b, d := stripeWith(t, db, stripeOpts{RefundsPending: true, OnAttempt: counts.on})
		ctx := t.Context()
		check := func(id string, op payments.Operation, want ...payments.Outcome) {
			t.Helper()
			var got []payments.Outcome
			for _, a := range b.attempts(t, id) {
				got = append(got, a.Outcome)
				wantRefusal := ""
				if a.Operation == op && a.Outcome == payments.OutcomeRefused {
					wantRefusal = "PROCESSOR_REFUSED"
				}
				if a.Refusal != wantRefusal {
					t.Errorf("%s %s attempt: refusal %q, want %q", a.Operation, a.Outcome, a.Refusal, wantRefusal)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("attempts of %s: %v, want %v", id, got, want)
			}
		}

		// A cancel of an intent captured in Stripe's dashboard, from the
		// admin: refused, and its replay answers the refusal again.
		c := stripeCard(t, b, "dashboard", false)
		if err := d.CaptureFromDashboard(c.ProcessorReference, 0); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			_, err := b.svc.Cancel(ctx, payments.CancelRequest{PaymentID: c.ID, IdempotencyKey: "cancel-c",
				Origin: payments.Origin{Transport: "admin", Actor: "ana"}})
			if !errors.Is(err, payments.ErrProcessorRefused) {
				t.Fatalf("cancel of a captured intent: %v, want PROCESSOR_REFUSED", err)
			}
		}
		check(c.ID, payments.OpCancel, payments.OutcomeCreated, payments.OutcomeRefused, payments.OutcomeReplayed)

		// A refund Stripe refuses at once: the charge was refunded in full
		// behind CMPay's back.
		r := stripeCard(t, b, "refunded", true)
		if _, err := b.conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "behind", PaymentReference: r.ProcessorReference,
			RefundID: "ref_behind", AmountMinor: r.Amount.Minor, Currency: r.Amount.Currency}); err != nil {
			t.Fatal(err)
		}
		if id := d.RefundsFor("ref_behind"); len(id) != 1 || d.SettleRefund(id[0], true, "") != nil {
			t.Fatalf("setup: refunds %v", id)
		}
		if _, err := b.svc.Refund(ctx, payments.RefundRequest{PaymentID: r.ID, IdempotencyKey: "refund-r",
			Origin: payments.Origin{Transport: "rest"}}); !errors.Is(err, payments.ErrProcessorRefused) {
			t.Fatalf("refund of a refunded charge: %v, want PROCESSOR_REFUSED", err)
		}
		check(r.ID, payments.OpRefund, payments.OutcomeCreated, payments.OutcomeRefused)

		// A refund that goes PROCESSING and then fails: REFUSED once
		// recovery learns it failed, as no money moved.
		f := stripeCard(t, b, "fails-later", true)
		res, err := b.svc.Refund(ctx, payments.RefundRequest{PaymentID: f.ID, IdempotencyKey: "refund-f", Amount: new("4"),
			Origin: payments.Origin{Transport: "graphql"}})
		if err != nil || res.Refund == nil || res.Refund.Status != payments.RefundProcessing {
			t.Fatalf("refund: %+v, %v; want it PROCESSING", res.Refund, err)
		}
		check(f.ID, payments.OpRefund, payments.OutcomeCreated, payments.OutcomeApplied)
		if counts.get("REFUND_PAYMENT APPLIED graphql")+counts.get("REFUND_PAYMENT REFUSED graphql") != 0 {
			t.Errorf("a refund in flight was counted: %v", counts.n)
		}
		if id := d.RefundsFor(res.Refund.ID); len(id) != 1 || d.SettleRefund(id[0], false, "expired_or_canceled_card") != nil {
			t.Fatalf("setup: refunds %v", id)
		}
		recoverUntil(t, b, f.ID, func(p payments.Payment) bool { return p.Reserved.Minor == 0 })
		check(f.ID, payments.OpRefund, payments.OutcomeCreated, payments.OutcomeRefused)

		// A capture Stripe applies stays APPLIED.
		a := stripeCard(t, b, "applied", false)
		if _, err := b.svc.Capture(ctx, payments.CaptureRequest{PaymentID: a.ID, IdempotencyKey: "capture-a",
			Origin: payments.Origin{Transport: "graphql"}}); err != nil {
			t.Fatal(err)
		}
		check(a.ID, payments.OpCapture, payments.OutcomeCreated, payments.OutcomeApplied)

		for key, want := range map[string]int{
			"CANCEL_PAYMENT REFUSED admin": 1, "CANCEL_PAYMENT APPLIED admin": 0, "CANCEL_PAYMENT REPLAYED admin": 1,
			"REFUND_PAYMENT REFUSED rest": 1, "REFUND_PAYMENT APPLIED rest": 0,
			"REFUND_PAYMENT REFUSED graphql": 1, "REFUND_PAYMENT APPLIED graphql": 0,
			"CAPTURE_PAYMENT APPLIED graphql": 1,
		} {
			if got := counts.get(key); got != want {
				t.Errorf("counted %q %d times, want %d", key, got, want)
			}
		}

		// The admin's attempts took that change and no other.
		err = db.Gorm.Exec(`UPDATE idempotency_attempts SET outcome = 'APPLIED', refusal = '' WHERE payment_id = ? AND transport = 'admin'`, c.ID).Error
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("an admin attempt set back to APPLIED: %v, want refused", err)
		}
	})
}

// The settlement's change to the admin's attempt is the only one the
// append-only triggers let through: REFUSED with another column changed,
// or REFUSED with another refusal, is refused.
func TestAdminAttemptsTakeOnlyTheProcessorsRefusal(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		insert := `INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, transport, actor, request_id)
			VALUES ('pay_x', 'CANCEL_PAYMENT', 'k', 'APPLIED', CURRENT_TIMESTAMP, 'admin', 'ana', 'op_x')`
		if err := db.Gorm.Exec(insert).Error; err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED', actor = 'mallory'`,
			`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PAYMENT_STATE_CONFLICT'`,
			`UPDATE idempotency_attempts SET outcome = 'REPLAYED'`,
		} {
			if err := db.Gorm.Exec(stmt).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want refused", stmt, err)
			}
		}
		if err := db.Gorm.Exec(`UPDATE idempotency_attempts SET outcome = 'REFUSED', refusal = 'PROCESSOR_REFUSED'`).Error; err != nil {
			t.Errorf("the processor's refusal: %v", err)
		}
	})
}
