package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// selectCounter counts the SELECT statements a connection sends.
type selectCounter struct {
	mu      sync.Mutex
	selects int
}

func (c *selectCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.TrimSpace(data.SQL), "SELECT") {
		c.mu.Lock()
		c.selects++
		c.mu.Unlock()
	}
	return ctx
}

func (*selectCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *selectCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.selects
	c.selects = 0
	return n
}

// A page of payments with their attempts and refunds costs a constant
// number of queries, however many payments it holds: the per-payment
// fields are batched (graph/loaders.go), not read one payment at a time.
func TestListQueriesAreBatched(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	counter := &selectCounter{}
	traced, err := database.Open(db.URL, database.Options{Tracer: counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(traced) })
	b := setup(t, dbtest.DB{Gorm: traced, Dialect: db.Dialect, URL: db.URL}, func(d *httpapi.Deps) {})

	query := `{ payments(first: 100) { edges { node { id attempts { outcome operation } refunds { amount } } } } }`
	for _, n := range []int{10, 100} {
		for i := range n - len(b.listed(t)) {
			id := b.create(t, fmt.Sprintf("n%d-%d", n, i), input("c", "10", "BRL", "PIX")).Payment.ID
			restLifecycle.send(t, b, "refundPayment", id, fmt.Sprintf("r%d-%d", n, i), map[string]any{"amount": "1"})
		}
		counter.take()
		res := b.gql(t, query, nil)
		if len(res.Errors) > 0 {
			t.Fatal(res.Errors)
		}
		if got := strings.Count(string(res.Data["payments"]), `"refunds":[{`); got != n {
			t.Fatalf("%d payments with refunds listed, want %d", got, n)
		}
		// The page, its attempts, its refunds.
		if selects := counter.take(); selects != 3 {
			t.Errorf("a page of %d payments with attempts and refunds took %d SELECTs, want 3", n, selects)
		}
	}
}

// listed returns the ids of the payments there are.
func (b *bundle) listed(t *testing.T) []string {
	t.Helper()
	var ids []string
	b.db.Gorm.Raw(`SELECT id FROM payments`).Scan(&ids)
	return ids
}
