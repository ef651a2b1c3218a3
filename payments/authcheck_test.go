package payments_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

// checkAuthorizations runs one round of reads of old authorizations and
// says how many it claimed.
func checkAuthorizations(t *testing.T, svc *payments.Service) int {
	t.Helper()
	n, err := svc.CheckAuthorizations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Authorizations Stripe canceled by itself (expired) or captured in its
// dashboard, whose events were lost, are read once a day old and shown as
// Stripe left them: CANCELED and CAPTURED with what was captured, one
// event each, the read listed under the create, as an event's read would.
// One still standing stays AUTHORIZED and is read again only a day after
// its read; none is read before its first day; the lost events, come at
// last, change nothing.
func TestOldAuthorizationsAreReadFromStripe(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		expired := stripeCard(t, b, "expired-auth", false)
		dashboard := stripeCard(t, b, "dashboard-capture", false)
		standing := stripeCard(t, b, "standing-auth", false)
		if err := d.ExpireAuthorization(expired.ProcessorReference); err != nil {
			t.Fatal(err)
		}
		if err := d.CaptureFromDashboard(dashboard.ProcessorReference, 800); err != nil {
			t.Fatal(err)
		}

		b.clock.Advance(payments.AuthCheckEvery - time.Minute)
		if n := checkAuthorizations(t, b.svc); n != 0 || d.Calls(stripedouble.GetPaymentIntent) != 0 {
			t.Fatalf("authorizations under a day old: %d claimed, %d read", n, d.Calls(stripedouble.GetPaymentIntent))
		}
		b.clock.Advance(2 * time.Minute)
		if n := checkAuthorizations(t, b.svc); n != 3 {
			t.Fatalf("%d claimed, want the 3 a day old", n)
		}
		wantSettledAtStripe(t, b, expired, dashboard)
		if got := b.mustGet(t, standing.ID); got.Status != payments.StatusAuthorized || len(b.calls(t, got)) != 2 {
			t.Errorf("the standing authorization: %s, calls %q", got.Status, b.calls(t, got))
		}

		// Read a moment ago: not again until a day has passed since.
		reads := d.Calls(stripedouble.GetPaymentIntent)
		b.clock.Advance(payments.AuthCheckEvery - time.Minute)
		if n := checkAuthorizations(t, b.svc); n != 0 || d.Calls(stripedouble.GetPaymentIntent) != reads {
			t.Fatalf("within a day of its read: %d claimed, %d read", n, d.Calls(stripedouble.GetPaymentIntent)-reads)
		}
		b.clock.Advance(2 * time.Minute)
		if n := checkAuthorizations(t, b.svc); n != 1 || d.Calls(stripedouble.GetPaymentIntent) != reads+1 {
			t.Fatalf("a day after its read: %d claimed, %d read; want 1, 1", n, d.Calls(stripedouble.GetPaymentIntent)-reads)
		}
		if got := b.mustGet(t, standing.ID); got.Status != payments.StatusAuthorized || len(b.calls(t, got)) != 3 {
			t.Errorf("the standing authorization: %s, calls %q", got.Status, b.calls(t, got))
		}

		applyEvents(t, b, d, expired.ProcessorReference, 1)
		applyEvents(t, b, d, dashboard.ProcessorReference, 1)
		if ev := b.events(t, expired.ID); ev["PAYMENT_CANCELED"] != 1 {
			t.Errorf("after the lost event came: %v", ev)
		}
		wantState(t, b.mustGet(t, dashboard.ID), payments.StatusCaptured, "8.00", "0.00")
	})
}

// A read that fails leaves the authorization as it was, and it is read
// again once the claim's lease has run out, not a day later: then settled.
func TestFailedAuthorizationReadIsRetried(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "lapsed", false)
		if err := d.ExpireAuthorization(p.ProcessorReference); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(payments.AuthCheckEvery + time.Minute)
		d.FailNext(stripedouble.GetPaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if n, err := b.svc.CheckAuthorizations(t.Context()); n != 1 || err == nil {
			t.Fatalf("a failed read: %d claimed, error %v; want 1 and the error", n, err)
		}
		if got := b.mustGet(t, p.ID); got.Status != payments.StatusAuthorized {
			t.Fatalf("after a failed read: %s", got.Status)
		}
		b.clock.Advance(payments.AuthCheckRetry - time.Second)
		if n := checkAuthorizations(t, b.svc); n != 0 {
			t.Fatalf("claimed again within its lease: %d", n)
		}
		b.clock.Advance(2 * time.Second)
		if n := checkAuthorizations(t, b.svc); n != 1 {
			t.Fatalf("not claimed again after its lease: %d", n)
		}
		got := b.mustGet(t, p.ID)
		wantState(t, got, payments.StatusCanceled, "0.00", "0.00")
		if calls := b.calls(t, got); len(calls) != 3 || calls[1] == calls[2] {
			t.Errorf("calls %q; want the create, the failed read and the read", calls)
		}
	})
}

// What is not the reads' is never read: a payment with a capture pending
// (recovery's), a sandbox payment (the sandbox never acts by itself),
// and payments no longer AUTHORIZED; beside them, the one old Stripe
// authorization is.
func TestAuthorizationReadsLeaveOthersAlone(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		pending := stripeCard(t, b, "capture-pending", false)
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if res, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: pending.ID, IdempotencyKey: "cap"}); err != nil ||
			res.Payment.PendingOperation != payments.OpCapture {
			t.Fatalf("capture: %+v, %v; want it pending", res, err)
		}
		stripeCard(t, b, "captured", true)
		due := stripeCard(t, b, "due", false)
		cfg := processor.DefaultConfig()
		cfg.Timeout = testTimeout
		sb := &bundle{db: db, clock: b.clock, svc: mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now,
			Processor: sandbox.New(cfg), ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})}
		sb.authorized(t, "sandbox-auth", "10.50")

		b.clock.Advance(7 * payments.AuthCheckEvery)
		if n := checkAuthorizations(t, b.svc); n != 1 || d.Calls(stripedouble.GetPaymentIntent) != 1 {
			t.Errorf("%d claimed, %d read; want the one due", n, d.Calls(stripedouble.GetPaymentIntent))
		}
		if got := b.mustGet(t, due.ID); len(b.calls(t, got)) != 2 {
			t.Errorf("the due one's calls: %q", b.calls(t, got))
		}
		if n := checkAuthorizations(t, sb.svc); n != 0 {
			t.Errorf("the sandbox's instance claimed %d", n)
		}
	})
}

// Two instances (two Services on one database) reading at once, round
// after round, read each old authorization once: more than one round's
// batch, some canceled at Stripe, all settled or stamped.
func TestTwoInstancesReadAnAuthorizationOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		other := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, Processor: b.conn,
			ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
		n := payments.AuthCheckBatch*2 + 3
		var ids []string
		for i := range n {
			p := stripeCard(t, b, "auth-"+string(rune('a'+i)), false)
			ids = append(ids, p.ID)
			if i%2 == 0 {
				if err := d.ExpireAuthorization(p.ProcessorReference); err != nil {
					t.Fatal(err)
				}
			}
		}
		b.clock.Advance(payments.AuthCheckEvery + time.Minute)
		var mu sync.Mutex
		claimed := 0
		var wg sync.WaitGroup
		for _, svc := range []*payments.Service{b.svc, other} {
			wg.Go(func() {
				for {
					k, err := svc.CheckAuthorizations(t.Context())
					if err != nil {
						t.Error(err)
						return
					}
					if k == 0 {
						return
					}
					mu.Lock()
					claimed += k
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if reads := d.Calls(stripedouble.GetPaymentIntent); claimed != n || reads != n {
			t.Errorf("%d authorizations: %d claimed, %d read", n, claimed, reads)
		}
		for i, id := range ids {
			got := b.mustGet(t, id)
			want := payments.StatusAuthorized
			if i%2 == 0 {
				want = payments.StatusCanceled
			}
			if got.Status != want || len(b.calls(t, got)) != 2 {
				t.Errorf("payment %d: %s, calls %q; want %s and one read", i, got.Status, b.calls(t, got), want)
			}
		}
	})
}

// The Recoverer, which runs on every instance, reads old authorizations
// by itself: one Stripe let expire becomes CANCELED with no event.
func TestRecovererReadsOldAuthorizations(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "expires", false)
		if err := d.ExpireAuthorization(p.ProcessorReference); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(payments.AuthCheckEvery + time.Minute)
		r := b.svc.Recoverer(10*time.Millisecond, nil)
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		waitFor(t, "the expired authorization canceled", func() bool {
			return b.mustGet(t, p.ID).Status == payments.StatusCanceled
		})
		if ev := b.events(t, p.ID); ev["PAYMENT_CANCELED"] != 1 {
			t.Errorf("events: %v", ev)
		}
	})
}

// On PostgreSQL a claim skips an authorization whose row another
// transaction holds (a request changing it, another instance claiming it)
// instead of waiting for it, and takes it once it is free.
func TestAuthorizationClaimSkipsHeldRows(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	b, _ := stripeSetup(t, db)
	held := stripeCard(t, b, "held", false)
	stripeCard(t, b, "free", false)
	b.clock.Advance(payments.AuthCheckEvery + time.Minute)
	err := db.Gorm.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT id FROM payments WHERE id = ? FOR UPDATE", held.ID).Error; err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		if n, err := b.svc.CheckAuthorizations(ctx); n != 1 || err != nil {
			t.Errorf("with one row held: %d claimed, %v; want the other one", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := checkAuthorizations(t, b.svc); n != 1 {
		t.Errorf("once free: %d claimed, want 1", n)
	}
	if got := b.mustGet(t, held.ID); len(b.calls(t, got)) != 2 {
		t.Errorf("the held one's calls: %q", b.calls(t, got))
	}
}

// SQLite's claim of the authorizations due for a read goes through their
// partial index in due order, as PostgreSQL's does: it neither reads every
// AUTHORIZED payment through idx_payments_status_created nor sorts them,
// which SQLite chooses without ANALYZE's statistics (as here).
func TestTheSQLiteAuthorizationClaimUsesItsIndex(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rows, err := sqlDB.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+payments.SQLiteClaimAuthorizations,
		now.Add(payments.AuthCheckRetry), now.Add(-payments.AuthCheckEvery), "stripe", payments.AuthCheckBatch)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	indexed := slices.ContainsFunc(plan, func(d string) bool {
		return strings.Contains(d, "USING INDEX idx_payments_auth_check")
	})
	sorted := slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, "TEMP B-TREE") })
	if !indexed || sorted {
		t.Errorf("plan %q: want idx_payments_auth_check and no sort", plan)
	}
}
