package integration_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// With PROCESSOR=stripe a capture or cancel runs its own transactions, not
// the batched statements: sent while the database hangs, each is answered
// SERVICE_UNAVAILABLE within blackholeBound too, as a create is
// (TestDatabaseBlackholed), not after the request's whole budget.
func TestStripeChangesWithTheDatabaseSilent(t *testing.T) {
	t.Parallel()
	double := stripedouble.New(stripedouble.Options{})
	t.Cleanup(double.Close)
	proxy, url := dbtest.ProxyURL(t, dbtest.Empty(t, "postgres"))
	srv := startServer(t, url, "PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_blackhole", "STRIPE_API_BASE="+double.URL(),
		"PROCESSOR_TIMEOUT=2s")
	authorize := func(key string) string {
		var out struct {
			CreatePayment struct{ Payment struct{ ID, Status string } }
		}
		if err := gqlData(srv.url, `mutation($key: String!) { createPayment(input: {clientId: "bh", amount: "3.00",
			currency: "USD", method: CREDIT_CARD, capture: false, paymentMethodToken: "pm_card_visa"}, idempotencyKey: $key) {
			payment { id status } } }`, map[string]any{"key": key}, &out); err != nil {
			t.Fatal(err)
		}
		if out.CreatePayment.Payment.Status != "AUTHORIZED" {
			t.Fatalf("create: %+v", out)
		}
		return out.CreatePayment.Payment.ID
	}
	ids := []string{authorize("bh-1"), authorize("bh-2")}
	// The pool's connections used just now, as under load (an idle one is
	// pinged first, which notices the silence sooner).
	for range 3 {
		if res, err := http.Get(srv.url + "/healthz"); err == nil {
			res.Body.Close()
		}
	}
	proxy.Freeze()
	var wg sync.WaitGroup
	for i, op := range []string{"capturePayment", "cancelPayment"} {
		wg.Go(func() {
			sent := time.Now()
			a, err := gql(srv.url, fmt.Sprintf(`mutation($id: ID!, $key: String!) { %s(paymentId: $id, idempotencyKey: $key) {
				payment { status } } }`, op), map[string]any{"id": ids[i], "key": fmt.Sprintf("bh-%s", op)})
			took := time.Since(sent)
			if err != nil || a.code() != "SERVICE_UNAVAILABLE" || took > blackholeBound {
				t.Errorf("%s with the database silent: %v %q after %s, want SERVICE_UNAVAILABLE within %s",
					op, err, a.code(), took.Round(time.Millisecond), blackholeBound)
			}
		})
	}
	wg.Wait()
}
