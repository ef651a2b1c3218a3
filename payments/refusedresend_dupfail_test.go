package payments_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// refuseDuplicates makes the database refuse every duplicate recorded
// until the function it answers is called: a write that fails, on either
// database, with no mock of the storage.
func refuseDuplicates(t *testing.T, db dbtest.DB) func() {
	t.Helper()
	stmts := []string{`CREATE TRIGGER refuse_duplicates BEFORE INSERT ON processor_duplicates
		BEGIN SELECT RAISE(ABORT, 'duplicates refused'); END`}
	drop := `DROP TRIGGER refuse_duplicates`
	if db.Dialect == "postgres" {
		stmts = []string{`CREATE FUNCTION refuse_duplicates() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'duplicates refused'; END $$`,
			`CREATE TRIGGER refuse_duplicates BEFORE INSERT ON processor_duplicates FOR EACH ROW
			EXECUTE FUNCTION refuse_duplicates()`}
		drop = `DROP TRIGGER refuse_duplicates ON processor_duplicates`
	}
	for _, s := range stmts {
		if err := db.Gorm.Exec(s).Error; err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		if err := db.Gorm.Exec(drop).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// A refund of 4.00 of 10.50 whose first two keys got a stored 500 each:
// recovery lists the refunds (none), and while its third key's send waits,
// Stripe completes both earlier requests, so _a3 is refused (2.50 left)
// and the list read again holds two refunds carrying its id. Recording the
// second as a duplicate fails (the database refuses it): the refused send
// and the read are still recorded, the refund left PROCESSING, and the
// next round reads the list again instead of sending: it settles SUCCEEDED
// on the first refund and records the other, with no further send under
// any key.
func TestARefusedResendWhoseDuplicateWriteFailsIsReadAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d, s := dupBundle(t, db)
		p := stripeCard(t, b, "refused-dup-fails", true)
		base := d.Calls(stripedouble.CreateRefund)
		d.FailNth(stripedouble.CreateRefund, base+1, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		// The third POST is _a2's first send (the second replays the first
		// key's 500).
		d.FailNth(stripedouble.CreateRefund, base+3, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		hold := make(chan struct{})
		lists := d.Calls(stripedouble.ListRefunds)
		d.FailNth(stripedouble.ListRefunds, lists+2, stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold})
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r",
			Amount: new("4")}); err != nil {
			t.Fatal(err)
		}
		recovered := make(chan error, 1)
		for range 10 {
			b.clock.Advance(testRecovery + time.Second)
			go func() {
				_, err := b.svc.RecoverDue(t.Context())
				recovered <- err
			}()
			var ended bool
			waitFor(t, "a recovery round's end or its second list of refunds", func() bool {
				select {
				case err := <-recovered:
					if err != nil {
						t.Fatal(err)
					}
					ended = true
				default:
				}
				return ended || d.Calls(stripedouble.ListRefunds) >= lists+2
			})
			if !ended {
				break
			}
		}
		keys := d.Keys(stripedouble.CreateRefund)
		if len(keys) != 2 || d.Calls(stripedouble.ListRefunds) != lists+2 {
			t.Fatalf("keys %q, %d lists; want _a2 sent, the second list held", keys, d.Calls(stripedouble.ListRefunds)-lists)
		}
		var made []string
		for _, k := range keys {
			ref, err := d.RollForward(k)
			if err != nil {
				t.Fatal(err)
			}
			made = append(made, ref)
		}
		allow := refuseDuplicates(t, db)
		close(hold)
		if err := <-recovered; err == nil {
			t.Fatal("the round whose duplicate could not be recorded returned no error")
		}
		got := b.mustGet(t, p.ID)
		want := []string{"WRITE a1 UNKNOWN server_error", "WRITE a1 UNKNOWN server_error", "READ a1 ERROR none_found",
			"WRITE a2 UNKNOWN server_error", "WRITE a2 UNKNOWN server_error", "READ a2 ERROR none_found",
			"WRITE a3 DECLINED amount_too_large", "READ a3 SUCCEEDED "}
		if calls := refundCalls(t, b, got); !slices.Equal(calls, want) || got.Reserved.Minor != 400 {
			t.Fatalf("refund calls %q, reserved %d; want %q, the refund still PROCESSING", calls, got.Reserved.Minor, want)
		}
		allow()
		posts := d.Calls(stripedouble.CreateRefund)
		settled := recoverUntil(t, b, p.ID, storedChanges["refund"].settled)
		if n := d.Calls(stripedouble.CreateRefund); n != posts || len(d.Keys(stripedouble.CreateRefund)) != 3 {
			t.Errorf("%d refund POSTs after the failed write, keys %q; want none, three keys", n-posts,
				d.Keys(stripedouble.CreateRefund))
		}
		if calls := refundCalls(t, b, settled); calls[len(calls)-1] != "READ a3 SUCCEEDED " || len(calls) != len(want)+1 {
			t.Errorf("refund calls %q, want %q and one more read", calls, want)
		}
		if settled.Refunded.Minor != 400 || !slices.Contains(made, refundReference(t, b, p.ID)) {
			t.Errorf("refunded %d, reference %q; want 400, one of %q", settled.Refunded.Minor, refundReference(t, b, p.ID), made)
		}
		dups := mustDuplicates(t, b, p.ID)
		if len(dups) != 1 || !slices.Contains(made, dups[0].Reference) || dups[0].Reference == refundReference(t, b, p.ID) ||
			s.count(payments.OpRefund) != 1 {
			t.Errorf("duplicates %+v, counted %d; want the other of %q, once", dups, s.count(payments.OpRefund), made)
		}
	})
}
