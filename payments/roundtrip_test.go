package payments_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

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

// tracedService returns a service on a PostgreSQL database of its own whose
// connections report every statement to the counter.
func tracedService(t *testing.T, cfg payments.Config) (*payments.Service, *statementCounter, *gorm.DB) {
	t.Helper()
	db := dbtest.Postgres(t)
	counter := &statementCounter{}
	traced, err := database.Open(db.URL, database.Options{Tracer: counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(traced) })
	return mustService(t, traced, cfg), counter, traced
}

// TestCreateRoundTrips pins how many statements (round trips to
// PostgreSQL) one create costs. A change that adds one fails here: make it
// cheaper, or raise the number knowingly.
func TestCreateRoundTrips(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Now()}
	svc, counter, _ := tracedService(t, payments.Config{KeyTTL: time.Hour, Now: clock.Now})
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
		// The statement settles a replay itself (decide's rule in SQL).
		{"replay", pix("k1"), 1},
		// And a conflict with a create's key (decide's other rule in SQL);
		// Go names the fields that differ from the key the row carries.
		{"conflict", request("client-1", "k1", "99", "BRL", payments.MethodPix), 1},
		// No currency digits are needed to refuse: the fields that differ
		// are computed in Go afterwards, from the stored parameters.
		{"conflict in another currency", request("client-1", "k1", "10.50", "USD", payments.MethodPix), 1},
	} {
		sent := counter.measure(func() { create(tt.req) })
		if len(sent) != tt.want {
			t.Errorf("%s: %d statements %v, want %d", tt.name, len(sent), sent, tt.want)
		}
	}
	// A statement whose answer was lost after its commit is run again
	// (the batcher does, request by request): the second run finds the
	// request's own key held, and decide answers it with a read of its
	// payment.
	runAgain := func() {
		if _, _, _, err := payments.SeamOf(svc).RunAgain(t.Context(), pix("k-again")); err != nil {
			t.Fatal(err)
		}
	}
	if sent := counter.measure(runAgain); len(sent) != 3 {
		t.Errorf("a statement run again: %d statements %v, want 3 (the first run, the second, a read of the payment)",
			len(sent), sent)
	}
	clock.Advance(2 * time.Hour)
	// Expiry is rare: find the key expired, read its payment (a key whose
	// payment is missing fails the request: TestCreateNeverMistakesAnErrorForAReplay),
	// forget it, create as new.
	if sent := counter.measure(func() { create(pix("k1")) }); len(sent) != 4 {
		t.Errorf("expired key: %d statements %v, want 4 (find it expired, read its payment, forget it, claim it)", len(sent), sent)
	}
}

// TestCreateBatchesConcurrentRequests sends new keys, replays and
// conflicts at once, several on the same keys, and checks that each got
// its own right answer, that the counts add up, and that the requests
// shared statements: fewer went to PostgreSQL than one per request.
func TestCreateBatchesConcurrentRequests(t *testing.T) {
	t.Parallel()
	svc, counter, traced := tracedService(t, payments.Config{})

	const held, fresh, repeats = 8, 32, 3
	existing := make(map[string]string) // key → payment id
	for i := range held {
		key := fmt.Sprintf("held-%d", i)
		res, err := svc.Create(t.Context(), pix(key))
		if err != nil {
			t.Fatal(err)
		}
		existing[key] = res.Payment.ID
	}

	type sent struct {
		req  payments.CreateRequest
		want string // created, replayed, rejected
	}
	var reqs []sent
	for i := range fresh {
		reqs = append(reqs, sent{pix(fmt.Sprintf("fresh-%d", i)), "created"})
	}
	for key := range existing {
		for range repeats {
			reqs = append(reqs, sent{pix(key), "replayed"})
			reqs = append(reqs, sent{request("client-1", key, "99", "BRL", payments.MethodPix), "rejected"})
		}
	}

	statements := counter.measure(func() {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, r := range reqs {
			wg.Go(func() {
				<-start
				res, err := svc.Create(t.Context(), r.req)
				got := "created"
				switch {
				case errors.Is(err, payments.ErrKeyReused):
					got = "rejected"
				case err != nil:
					t.Errorf("%s: %v", r.req.IdempotencyKey, err)
					return
				case res.Replayed:
					got = "replayed"
					if res.Payment.ID != existing[r.req.IdempotencyKey] {
						t.Errorf("%s replayed payment %s, want %s", r.req.IdempotencyKey, res.Payment.ID, existing[r.req.IdempotencyKey])
					}
				}
				if got != r.want {
					t.Errorf("%s (amount %s): %s, want %s", r.req.IdempotencyKey, r.req.Amount, got, r.want)
				}
			})
		}
		close(start)
		wg.Wait()
	})

	for key, id := range existing {
		p, err := svc.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if p.ReplayCount != repeats || p.RejectedCount != repeats {
			t.Errorf("%s: %d replays, %d rejections counted; want %d each", key, p.ReplayCount, p.RejectedCount, repeats)
		}
	}
	var paymentRows, attemptRows int64
	traced.Table("payments").Count(&paymentRows)
	traced.Table("idempotency_attempts").Count(&attemptRows)
	if paymentRows != held+fresh || attemptRows != int64(held+len(reqs)) {
		t.Errorf("%d payments, %d attempts; want %d, %d", paymentRows, attemptRows, held+fresh, held+len(reqs))
	}
	// Unbatched, this traffic costs one statement per request.
	unbatched := len(reqs)
	if len(statements) >= unbatched {
		t.Errorf("%d statements for %d requests: none were batched", len(statements), len(reqs))
	}
	t.Logf("%d requests, %d statements", len(reqs), len(statements))
}
