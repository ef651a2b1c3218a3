package payments_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// statementCounter counts what a connection sends: every statement, BEGIN
// and COMMIT each being one.
type statementCounter struct {
	mu    sync.Mutex
	sent  []string
	count bool
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count {
		c.sent = append(c.sent, strings.Fields(data.SQL)[0])
	}
	return ctx
}

func (*statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// measure returns what fn sent.
func (c *statementCounter) measure(fn func()) []string {
	c.mu.Lock()
	c.sent, c.count = nil, true
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = false
	return c.sent
}

// TestCreateRoundTrips pins how many statements (round trips to
// PostgreSQL) one create costs. A change that adds one fails here: make it
// cheaper, or raise the number knowingly.
func TestCreateRoundTrips(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	counter := &statementCounter{}
	traced, err := database.Open(db.URL, database.Options{Tracer: counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(traced) })
	clock := &fakeClock{now: time.Now()}
	svc := payments.NewService(traced, payments.Config{KeyTTL: time.Hour, Now: clock.Now})
	create := func(req payments.CreateRequest) {
		if _, err := svc.Create(t.Context(), req); err != nil && !strings.Contains(err.Error(), "idempotency key already used") {
			t.Fatal(err)
		}
	}
	// Warm the connection up: its first statements are prepared, which
	// is a one-off per connection.
	create(pix("warm-up"))
	create(pix("warm-up"))
	create(request("client-1", "warm-up", "1", "BRL", payments.MethodPix))

	for _, tt := range []struct {
		name string
		req  payments.CreateRequest
		want int
	}{
		{"new key", pix("k1"), 1},
		{"replay", pix("k1"), 1},
		{"conflict", request("client-1", "k1", "99", "BRL", payments.MethodPix), 2}, // the differing fields need Go's currency table
	} {
		sent := counter.measure(func() { create(tt.req) })
		if len(sent) != tt.want {
			t.Errorf("%s: %d statements %v, want %d", tt.name, len(sent), sent, tt.want)
		}
	}
	clock.Advance(2 * time.Hour)
	if sent := counter.measure(func() { create(pix("k1")) }); len(sent) != 2 {
		t.Errorf("expired key: %d statements %v, want 2 (find it expired, take it over)", len(sent), sent)
	}
}
