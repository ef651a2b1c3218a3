package payments_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	if settled.Status != payments.StatusCaptured || len(keys) != 2 || keys[1] != keys[0]+"_a2" {
		t.Fatalf("settled %s under keys %q; want CAPTURED, sent again under _a2", settled.Status, keys)
	}
	return settled, keys[0]
}

// A create sent again whose first request Stripe never completes: the late
// check reads it, finds only the payment's own intent (_a2's), and records
// nothing; it reads it a second time a day later, with the same finding,
// and later rounds never read it again.
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
		if n := checkLateAt(t, b, due.Add(lateRecheck-time.Minute)); n != 0 {
			t.Errorf("a minute before a day after the first read: claimed %d, want none", n)
		}
		if n := checkLateAt(t, b, due.Add(time.Minute+lateRecheck)); n != 1 ||
			d.Calls(stripedouble.SearchPaymentIntents) != searches+2 {
			t.Fatalf("a day after the first read: claimed %d, %d searches; want the create, searched a second time", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		if n := checkLateAt(t, b, due.Add(96*time.Hour)); n != 0 || d.Calls(stripedouble.SearchPaymentIntents) != searches+2 {
			t.Errorf("days later: claimed %d, %d searches in all; want none more", n,
				d.Calls(stripedouble.SearchPaymentIntents)-searches)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 0 {
			t.Errorf("duplicates %+v after the second read, want none", got)
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
		if n := checkLateAt(t, b, due.Add(12*time.Hour)); n != 0 {
			t.Errorf("once stamped: claimed %d before its second read is due, want none", n)
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

// A full refund whose first request got a stored 500, and which Stripe
// completes between recovery's list of refunds (nothing with its id) and
// the send under _a2: Stripe refuses _a2 (the charge is refunded already),
// which is no word that the refund did not happen. The list read again
// holds the first request's refund, so the refund settles SUCCEEDED on it,
// its amount counted, and the late check, which reads the same list a day
// later, finds nothing besides the refund's own record.
func TestARefusedResendOfARefundCompletedMeanwhileSucceeds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p, stray := refundRolledForwardBeforeItsResend(t, b, d, "late-refused", nil)
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		keys := d.Keys(stripedouble.CreateRefund)
		if ref := refundReference(t, b, p.ID); len(keys) != 2 || settled.Refunded.Minor != 1050 || ref != stray {
			t.Fatalf("keys %q, refunded %d, reference %q; want _a2 sent and refused, 1050 refunded, Stripe's %s",
				keys, settled.Refunded.Minor, ref, stray)
		}
		if l := d.Ledger(p.ProcessorReference); l.Refunds != 1 || l.Refunded != 1050 {
			t.Errorf("the double's ledger %+v, want one refund of 1050", l)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_REFUNDED"] != 1 || ev["PAYMENT_REFUND_FAILED"] != 0 {
			t.Errorf("events %v, want one PAYMENT_REFUNDED and no PAYMENT_REFUND_FAILED", ev)
		}
		want := []string{"WRITE a1 UNKNOWN server_error", "WRITE a1 UNKNOWN server_error", "READ a1 ERROR none_found",
			"WRITE a2 DECLINED charge_already_refunded", "READ a2 SUCCEEDED "}
		if got := refundCalls(t, b, settled); !slices.Equal(got, want) {
			t.Errorf("refund calls %q, want %q", got, want)
		}
		if n := checkLateAt(t, b, lateDue(t, b, p.ID, payments.OpRefund).Add(time.Second)); n != 1 {
			t.Fatalf("past the window: claimed %d, want the refund", n)
		}
		if got := mustDuplicates(t, b, p.ID); len(got) != 0 || s.count(payments.OpRefund) != 0 {
			t.Errorf("duplicates %+v, counted %d; want none: Stripe's only refund is the refund's own", got,
				s.count(payments.OpRefund))
		}
	})
}

// refundRolledForwardBeforeItsResend is a captured card payment (key) of
// 10.50 whose full refund got a stored 500, and a recovery round that
// lists the intent's refunds, finds none with the refund's id, and sends
// it again under _a2, while the double completes the first request after
// the list and before that send. Once the first request is completed,
// before the list's answer is released, beforeSend (when not nil) runs.
// It answers the payment and the refund the double made.
func refundRolledForwardBeforeItsResend(t *testing.T, b *bundle, d *stripedouble.Double, key string,
	beforeSend func()) (payments.Payment, string) {
	t.Helper()
	p := stripeCard(t, b, key, true)
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
	if beforeSend != nil {
		beforeSend()
	}
	close(hold)
	if err := <-recovered; err != nil {
		t.Fatal(err)
	}
	return p, stray
}

// refundReference is the processor's reference CMPay holds for the one
// refund of payment id; "" when it holds none.
func refundReference(t *testing.T, b *bundle, id string) string {
	t.Helper()
	var ref *string
	if err := b.db.Gorm.Raw("SELECT processor_reference FROM refunds WHERE payment_id = ?", id).Row().Scan(&ref); err != nil {
		t.Fatal(err)
	}
	if ref == nil {
		return ""
	}
	return *ref
}

// refundCalls are the calls of p's refund, in order, each as its kind,
// the attempt its key names (a1 for the operation's first key), its
// outcome and its code.
func refundCalls(t *testing.T, b *bundle, p payments.Payment) []string {
	t.Helper()
	all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all[0] {
		if c.Operation != payments.OpRefund {
			continue
		}
		attempt := "a1"
		if i := strings.LastIndex(c.ProcessorKey, "_a"); i >= 0 {
			attempt = c.ProcessorKey[i+1:]
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", c.Kind, attempt, c.Outcome, c.Code))
	}
	return out
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
