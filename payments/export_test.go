package payments_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestExportMatchesList: for every filter, Export yields exactly what
// walking List page by page yields, in the same order, across several of
// Export's pages; a consumer may stop early; a bad filter is an error.
func TestExportMatchesList(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		ctx := context.Background()
		start := b.clock.Now()
		const n = 230 // more than two of Export's pages (100 in these tests: exportpage_test.go)
		clients := []string{"alpha", "beta", "gamma"}
		create := func(i int) error {
			req := request(clients[i%3], fmt.Sprintf("k%04d", i), fmt.Sprint(1+i%4), "BRL", payments.MethodPix)
			if i%5 == 0 {
				no := false
				req.Capture = &no
			}
			if i == 17 {
				req.ClientID = "k0042" // a client id that is also another payment's key
			}
			if _, err := b.svc.Create(ctx, req); err != nil {
				return err
			}
			if i%97 == 0 { // a replay
				if _, err := b.svc.Create(ctx, req); err != nil {
					return err
				}
			}
			if i%211 == 0 { // a rejection: the key reused for another amount
				other := req
				other.Amount = "99"
				if _, err := b.svc.Create(ctx, other); err == nil {
					return fmt.Errorf("the reused key %s was not refused", other.IdempotencyKey)
				}
			}
			return nil
		}
		// Ten at a time, concurrently (the service batches them), then the
		// clock moves on 45 s: payments of one ten are microseconds apart,
		// in whichever order they came.
		const together = 10
		for first := 0; first < n; first += together {
			var wg sync.WaitGroup
			errs := make([]error, together)
			for i := first; i < min(first+together, n); i++ {
				wg.Go(func() { errs[i-first] = create(i) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			b.clock.Advance(45 * time.Second)
		}
		amount := payments.Money{Minor: 300, Currency: "BRL"}
		for name, f := range map[string]payments.Filter{
			"all":       {},
			"client":    {ClientID: "beta"},
			"key":       {IdempotencyKey: "k0100"},
			"replayed":  {Replayed: true},
			"flagged":   {Flagged: true, ClientID: "alpha"},
			"rejected":  {Rejected: true},
			"status":    {Status: payments.StatusAuthorized},
			"amount":    {Amount: &amount},
			"range":     {From: start.Add(500 * time.Second), To: start.Add(1700 * time.Second)},
			"search":    {Search: "k0042"},
			"search-cl": {Search: "gamma", Status: payments.StatusCaptured},
		} {
			var listed []string
			after := ""
			for {
				page, err := b.svc.List(ctx, f, payments.MaxPageSize, after)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range page.Payments {
					listed = append(listed, p.ID)
				}
				if !page.HasNextPage {
					break
				}
				after = page.EndCursor()
			}
			var exported []string
			for p, err := range b.svc.Export(ctx, f) {
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				exported = append(exported, p.ID)
			}
			if !slices.Equal(listed, exported) || len(listed) == 0 {
				t.Errorf("%s: list has %d payments, export %d, or they differ", name, len(listed), len(exported))
			}
		}

		read := 0
		for range b.svc.Export(ctx, payments.Filter{}) {
			read++
			if read == 3 {
				break
			}
		}
		for _, f := range []payments.Filter{{Status: "NOPE"}, {From: start, To: start}} {
			var bad error
			for _, err := range b.svc.Export(ctx, f) {
				bad = err
			}
			if bad == nil {
				t.Errorf("a bad filter %+v exported", f)
			}
		}
	})
}
