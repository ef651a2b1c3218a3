package payments

import (
	"fmt"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/processor"
)

// Recovery's read finds two intents for one create, both still
// processing: nothing settles, so nothing is recorded, since the next
// read (a search after a list, or another order) may settle on the
// other. Once a read settles on one, the other is recorded, and never the
// one settled on.
func TestSettleOnOneRecordsOnlyOnceSettled(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, err := NewService(db.Gorm, Config{})
		if err != nil {
			t.Fatal(err)
		}
		op := operationRow{paymentID: "pay_1", processor: processor.NameStripe, operation: OpCreate}
		a := processor.Payment{Reference: "pi_a", PaymentID: "pay_1", AmountMinor: 100, Currency: "BRL",
			State: processor.PaymentProcessing}
		b := a
		b.Reference = "pi_b"
		out, err := s.settleOnOne(t.Context(), op, []processor.Payment{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if dups, err := s.DuplicatesOf(t.Context(), "pay_1"); err != nil || out.settled || len(dups) != 0 {
			t.Fatalf("settled %v, duplicates %+v, %v; want unsettled, none recorded", out.settled, dups, err)
		}
		b.State = processor.PaymentCaptured
		out, err = s.settleOnOne(t.Context(), op, []processor.Payment{a, b})
		if err != nil {
			t.Fatal(err)
		}
		dups, err := s.DuplicatesOf(t.Context(), "pay_1")
		if err != nil || !out.settled || out.reference != "pi_b" || len(dups) != 1 || dups[0].Reference != "pi_a" {
			t.Errorf("settled %v on %q, duplicates %+v, %v; want settled on pi_b, pi_a recorded", out.settled,
				out.reference, dups, err)
		}
	})
}

// TestChosenFoundPrefersWhatMovedMoney: of the payments a read finds for
// one create, recovery settles on the one that went furthest, whatever the
// processor's order, so that a real charge is never the one shown as the
// second while the payment is settled CANCELED or DECLINED.
func TestChosenFoundPrefersWhatMovedMoney(t *testing.T) {
	at := func(states ...processor.PaymentState) []processor.Payment {
		out := make([]processor.Payment, len(states))
		for i, st := range states {
			out[i] = processor.Payment{Reference: fmt.Sprintf("pi_%d", i), State: st}
		}
		return out
	}
	cases := []struct {
		found []processor.Payment
		want  int
	}{
		{nil, -1},
		{at(processor.PaymentDeclined), 0},
		{at(processor.PaymentCanceled, processor.PaymentCaptured), 1},
		{at(processor.PaymentDeclined, processor.PaymentRequiresAction), 1},
		{at(processor.PaymentProcessing, processor.PaymentAuthorized, processor.PaymentCanceled), 1},
		{at(processor.PaymentExpired, processor.PaymentPending), 1},
		{at(processor.PaymentCaptured, processor.PaymentCaptured), 0},
		{at(processor.PaymentDeclined, processor.PaymentExpired), 1},
	}
	for _, c := range cases {
		if got := chosenFound(c.found); got != c.want {
			t.Errorf("chosenFound(%v) = %d, want %d", c.found, got, c.want)
		}
	}
}
