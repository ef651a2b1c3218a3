package payments_test

import (
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// A client id typed precomposed (NFC) and decomposed (NFD) is one client:
// the retry in the other form replays the payment, and a filter in either
// form finds it.
func TestClientIDComparedInNFC(t *testing.T) {
	t.Parallel()
	const nfc, nfd = "caf\u00e9", "cafe\u0301"
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.mustCreate(t, request(nfc, "order-1", "10.50", "BRL", payments.MethodPix))
		retry := b.mustCreate(t, request(nfd, "order-1", "10.50", "BRL", payments.MethodPix))
		if !retry.Replayed || retry.Payment.ID != first.Payment.ID {
			t.Fatalf("the NFD retry made %s (replayed %v); want a replay of %s", retry.Payment.ID, retry.Replayed, first.Payment.ID)
		}
		if got := b.count(t, "payments"); got != 1 {
			t.Errorf("%d payments, want 1", got)
		}
		decomposed := b.mustCreate(t, request(nfd, "order-2", "1.00", "BRL", payments.MethodPix))
		if decomposed.Payment.ClientID != nfc {
			t.Errorf("stored client id %+q, want %+q", decomposed.Payment.ClientID, nfc)
		}
		for _, client := range []string{nfc, nfd} {
			page, err := b.svc.List(t.Context(), payments.Filter{ClientID: client}, 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Payments) != 2 {
				t.Errorf("filter %+q found %d payments, want 2", client, len(page.Payments))
			}
		}
	})
}
