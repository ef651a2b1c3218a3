package payments

import (
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/processor"
)

// Recovery's read finds two intents for one create, the first still
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
		b.Reference, b.State = "pi_b", processor.PaymentCaptured
		out, err := s.settleOnOne(t.Context(), op, []processor.Payment{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if dups, err := s.DuplicatesOf(t.Context(), "pay_1"); err != nil || out.settled || len(dups) != 0 {
			t.Fatalf("settled %v, duplicates %+v, %v; want unsettled, none recorded", out.settled, dups, err)
		}
		out, err = s.settleOnOne(t.Context(), op, []processor.Payment{b, a})
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
