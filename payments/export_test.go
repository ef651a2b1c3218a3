package payments_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestExport: every matching payment, in the list's order, across many
// pages, and nothing else; a consumer may stop early.
func TestExport(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		ctx := context.Background()
		const n = 2*payments.MaxPageSize + 7
		for i := range n {
			client := "even"
			if i%2 == 1 {
				client = "odd"
			}
			if _, err := b.svc.Create(ctx, request(client, fmt.Sprintf("k%04d", i), "1", "BRL", payments.MethodPix)); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(time.Second)
		}
		collect := func(f payments.Filter) []string {
			var keys []string
			for p, err := range b.svc.Export(ctx, f) {
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, p.IdempotencyKey)
			}
			return keys
		}
		all := collect(payments.Filter{})
		if len(all) != n || all[0] != fmt.Sprintf("k%04d", n-1) || all[n-1] != "k0000" {
			t.Fatalf("%d payments, first %s, last %s", len(all), all[0], all[len(all)-1])
		}
		seen := map[string]bool{}
		for _, k := range all {
			if seen[k] {
				t.Fatalf("%s twice", k)
			}
			seen[k] = true
		}
		odd := collect(payments.Filter{ClientID: "odd"})
		if len(odd) != n/2 || odd[0] != fmt.Sprintf("k%04d", n-2) {
			t.Errorf("odd: %d payments, first %s", len(odd), odd[0])
		}
		if got := collect(payments.Filter{IdempotencyKey: "k0003"}); len(got) != 1 {
			t.Errorf("by key: %v", got)
		}

		read := 0
		for range b.svc.Export(ctx, payments.Filter{}) {
			read++
			if read == 3 {
				break
			}
		}
		var bad error
		for _, err := range b.svc.Export(ctx, payments.Filter{Status: "NOPE"}) {
			bad = err
		}
		if bad == nil {
			t.Error("a bad filter exported")
		}
	})
}
