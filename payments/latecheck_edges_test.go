package payments_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// The late check's edges: what it must not record (the operation's own
// intent, a duplicate found already), what it must not miss (an intent
// search shows late, an operation settled after its window), and how many
// readers it takes (two instances, a restart, a row another transaction
// holds).

// resentCreate is a card payment (key) whose create got a stored 500 and
// was sent again under _a2 and settled on _a2's intent; it answers the
// payment and the first key, which RollForward completes.
func resentCreate(t *testing.T, b *bundle, d *stripedouble.Double, key string) (payments.Payment, string) {
	t.Helper()
	d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
	p := b.mustCreate(t, withToken(card(key), "pm_card_visa")).Payment
	settled := recoverUntilSettled(t, b, p.ID)
	keys := d.Keys(stripedouble.CreatePaymentIntent)
	if settled.Status != payments.StatusCaptured || len(keys) != 2 {
		t.Fatalf("settled %s under keys %q; want CAPTURED, sent again under _a2", settled.Status, keys)
	}
	return settled, keys[0]
}

// A create sent again whose first request Stripe never completes: the late
// check reads it once, finds only the payment's own intent (_a2's), and
// records nothing; later rounds never read it again.
func TestLateCheckOfAResentCreateFindsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, _ := resentCreate(t, b, d, "late-own")
		due := lateDue(t, b, p.ID, payments.OpCreate)
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || d.Calls(stripedouble.SearchPaymentIntents) != searches+1 {
			t.Fatalf("past the window: claimed %d, %d searches; want the create, searched once", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 0 || s.count(payments.OpCreate) != 0 {
			t.Errorf("duplicates %+v, counted %d; want none: the one intent found is the payment's own (%s)",
				got, s.count(payments.OpCreate), p.ProcessorReference)
		}
		if n := checkLateAt(t, b, due.Add(72*time.Hour)); n != 0 || d.Calls(stripedouble.SearchPaymentIntents) != searches+1 {
			t.Errorf("days later: claimed %d, %d searches in all; want none more", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
	})
}

// Stripe may complete an earlier key's request until that key's lifetime
// ends as Stripe's clock runs (behind CMPay's by up to keyMargin), and its
// search shows the intent only STRIPE_SEARCH_LAG later. Rolled forward at
// that last moment, with the double's search lagging as much, the intent
// is still found: rounds a few seconds apart from then on record it, so
// no round claims the create before search can show it.
func TestLateCheckWaitsForSearchToShowALastMomentCompletion(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, first := resentCreate(t, b, d, "late-lag")
		due := lateDue(t, b, p.ID, payments.OpCreate)
		d.SetSearchLag(processor.DefaultStripeSearchLag)
		b.clock.Advance(due.Add(-processor.DefaultStripeSearchLag - time.Second).Sub(b.clock.Now()))
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		claimed := 0
		for at := b.clock.Now(); at.Before(due.Add(time.Minute)); at = at.Add(5 * time.Second) {
			claimed += checkLateAt(t, b, at)
		}
		if got := mustDuplicates(t, b, p.ID); claimed != 1 || len(got) != 1 || got[0].Reference != stray {
			t.Errorf("claimed %d, duplicates %+v; want the create claimed once and %s recorded", claimed, got, stray)
		}
		if n := s.count(payments.OpCreate); n != 1 {
			t.Errorf("counted %d, want 1", n)
		}
	})
}

// An operation sent again that is still unsettled when its window ends is
// not read then; once recovery settles it (here on one of the two intents
// the two keys made, recording the other), the late check reads it once,
// and what it finds again is not recorded, logged or counted twice.
func TestLateCheckWaitsForAnOperationSettledAfterItsWindow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		// The create's third POST is _a2's first send (the second replays
		// the first key's 500): made at Stripe, answered with a 500.
		d.FailNth(stripedouble.CreatePaymentIntent, 3, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		p := b.mustCreate(t, withToken(card("late-unsettled"), "pm_card_visa")).Payment
		for range 100 {
			if len(d.Keys(stripedouble.CreatePaymentIntent)) == 2 {
				break
			}
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		keys := d.Keys(stripedouble.CreatePaymentIntent)
		var row models.ProcessorOperation
		if err := b.db.Gorm.Where("payment_id = ?", p.ID).First(&row).Error; err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || row.KeySince == nil || row.SettledAt != nil || row.LastSendAt == nil {
			t.Fatalf("keys %q, key since %v, settled %v, last send %v; want _a2 sent, unsettled", keys, row.KeySince,
				row.SettledAt, row.LastSendAt)
		}
		stray, err := d.RollForward(keys[0])
		if err != nil {
			t.Fatal(err)
		}
		due := row.LastSendAt.Add(lateAfter)
		if n := checkLateAt(t, b, due.Add(time.Hour)); n != 0 {
			t.Fatalf("unsettled past its window: claimed %d, want none", n)
		}
		recoverUntilSettled(t, b, p.ID)
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, b.clock.Now().Add(time.Second)); n != 1 ||
			d.Calls(stripedouble.SearchPaymentIntents) != searches+1 {
			t.Fatalf("once settled: claimed %d, %d searches; want the create, searched once", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		got := mustDuplicates(t, b, p.ID)
		if after := b.mustGet(t, p.ID); len(got) != 1 || got[0].Reference == after.ProcessorReference {
			t.Errorf("duplicates %+v of a payment settled on %s; want the other intent", got, after.ProcessorReference)
		}
		if n, lines := s.count(payments.OpCreate), s.errorLines(got[0].Reference); n != 1 || len(lines) != 1 {
			t.Errorf("counted %d, ERROR lines %q; want one of each (rolled forward: %s)", n, lines, stray)
		}
	})
}

// Two instances checking at once read a due operation once: one claims
// it, the other finds it claimed (or, on PostgreSQL, locked, and skips
// it); one search, one duplicate, counted once.
func TestTwoInstancesLateCheckAnOperationOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		other := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, Processor: b.conn,
			ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery, OnDuplicate: s.onDuplicate})
		p, first := resentCreate(t, b, d, "late-two")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(lateDue(t, b, p.ID, payments.OpCreate).Add(time.Second).Sub(b.clock.Now()))
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		var claimed atomic.Int64
		var wg sync.WaitGroup
		for _, svc := range []*payments.Service{b.svc, other} {
			wg.Go(func() {
				n, err := svc.CheckLateCompletions(t.Context())
				if err != nil {
					t.Error(err)
				}
				claimed.Add(int64(n))
			})
		}
		wg.Wait()
		if n, got := claimed.Load(), d.Calls(stripedouble.SearchPaymentIntents)-searches; n != 1 || got != 1 {
			t.Errorf("claimed %d, searched %d times; want one of each", n, got)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 1 || got[0].Reference != stray || s.count(payments.OpCreate) != 1 {
			t.Errorf("duplicates %+v, counted %d; want %s once", got, s.count(payments.OpCreate), stray)
		}
	})
}

// An instance that stops after recording a duplicate and before stamping
// the operation checked leaves it claimed and unstamped; once the claim
// runs out another round reads it again, and finds the duplicate recorded
// already: nothing more is stored, logged at ERROR or counted.
func TestLateCheckAfterARestartRecordsNothingTwice(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, first := resentCreate(t, b, d, "late-restart")
		stray, err := d.RollForward(first)
		if err != nil {
			t.Fatal(err)
		}
		due := lateDue(t, b, p.ID, payments.OpCreate)
		if n := checkLateAt(t, b, due.Add(time.Second)); n != 1 || len(mustDuplicates(t, b, p.ID)) != 1 {
			t.Fatalf("the first check: claimed %d, duplicates %+v", n, mustDuplicates(t, b, p.ID))
		}
		// What the stop leaves: the claim the round wrote, no stamp.
		if err := b.db.Gorm.Model(&models.ProcessorOperation{}).Where("payment_id = ?", p.ID).
			Updates(map[string]any{"late_checked_at": nil, "late_check_lease": due.Add(10*time.Minute + time.Second)}).Error; err != nil {
			t.Fatal(err)
		}
		searches := d.Calls(stripedouble.SearchPaymentIntents)
		if n := checkLateAt(t, b, due.Add(9*time.Minute)); n != 0 {
			t.Fatalf("inside the claim: claimed %d, want none", n)
		}
		if n := checkLateAt(t, b, due.Add(11*time.Minute)); n != 1 || d.Calls(stripedouble.SearchPaymentIntents) != searches+1 {
			t.Fatalf("past the claim: claimed %d, %d searches; want the create read again", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		got := mustDuplicates(t, b, p.ID)
		if n, lines := s.count(payments.OpCreate), s.errorLines(stray); len(got) != 1 || n != 1 || len(lines) != 1 {
			t.Errorf("duplicates %+v, counted %d, ERROR lines %q; want one of each", got, n, lines)
		}
		if n := checkLateAt(t, b, due.Add(48*time.Hour)); n != 0 {
			t.Errorf("once stamped: claimed %d, want none", n)
		}
	})
}

// On PostgreSQL a late check's claim skips an operation whose row another
// transaction holds (recovery settling it, another instance claiming it)
// instead of waiting for it, and claims it once it is free.
func TestLateCheckClaimSkipsHeldRows(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	b, d, _ := dupBundle(t, db)
	p, _ := resentCreate(t, b, d, "late-held")
	b.clock.Advance(lateDue(t, b, p.ID, payments.OpCreate).Add(time.Second).Sub(b.clock.Now()))
	err := db.Gorm.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT id FROM processor_operations WHERE payment_id = ? FOR UPDATE", p.ID).Error; err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		if n, err := b.svc.CheckLateCompletions(ctx); n != 0 || err != nil {
			t.Errorf("with its row held: claimed %d, %v; want none, at once", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := checkLateAt(t, b, b.clock.Now()); n != 1 {
		t.Errorf("once free: claimed %d, want 1", n)
	}
}

// A full refund whose first request got a stored 500 is proved not made
// by the list of refunds, and Stripe completes that request between the
// list and _a2's send: _a2 is refused (nothing left to refund), so CMPay's
// refund ends FAILED with no reference of Stripe's, while Stripe holds one
// refund for it, the first request's. Having no refund of its own at
// Stripe, CMPay's refund gets the one Stripe made recorded by the late
// check: a divergence a person must look at (CMPay says FAILED, the payer
// had the money back), shown as any second refund is.
func TestLateCheckRecordsTheRefundOfARefundSettledWithoutOne(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := stripeCard(t, b, "late-refused", true)
		d.FailNext(stripedouble.CreateRefund, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "full",
			Amount: new("10.50")}); err != nil {
			t.Fatal(err)
		}
		hold := make(chan struct{})
		d.FailNext(stripedouble.ListRefunds, stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold})
		recovered := listHeldInRecovery(t, b, d)
		stray, err := d.RollForward(d.Keys(stripedouble.CreateRefund)[0])
		if err != nil {
			t.Fatal(err)
		}
		close(hold)
		if err := <-recovered; err != nil {
			t.Fatal(err)
		}
		settled := recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
		keys := d.Keys(stripedouble.CreateRefund)
		var ref *string
		if err := b.db.Gorm.Raw("SELECT processor_reference FROM refunds WHERE payment_id = ?", p.ID).Row().Scan(&ref); err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 || settled.Refunded.Minor != 0 || ref != nil {
			t.Fatalf("keys %q, refunded %d, reference %v; want _a2 sent and refused, nothing refunded, no reference",
				keys, settled.Refunded.Minor, ref)
		}
		if n := checkLateAt(t, b, lateDue(t, b, p.ID, payments.OpRefund).Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		got := mustDuplicates(t, b, p.ID)
		if len(got) != 1 || got[0].Reference != stray || s.count(payments.OpRefund) != 1 {
			t.Errorf("duplicates %+v, counted %d; want %s, Stripe's only refund of it", got, s.count(payments.OpRefund), stray)
		}
	})
}

// listHeldInRecovery runs recovery rounds until one lists the refunds
// (which the double holds), and answers that round's end.
func listHeldInRecovery(t *testing.T, b *bundle, d *stripedouble.Double) <-chan error {
	t.Helper()
	lists := d.Calls(stripedouble.ListRefunds)
	for range 10 {
		b.clock.Advance(testRecovery + time.Second)
		recovered := make(chan error, 1)
		go func() {
			_, err := b.svc.RecoverDue(t.Context())
			recovered <- err
		}()
		var ended bool
		waitFor(t, "a recovery round's end or its list of refunds", func() bool {
			select {
			case err := <-recovered:
				if err != nil {
					t.Fatal(err)
				}
				ended = true
			default:
			}
			return ended || d.Calls(stripedouble.ListRefunds) > lists
		})
		if !ended {
			return recovered
		}
	}
	t.Fatal("no recovery round listed the refunds")
	return nil
}
