package payments_test

import (
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// bundle is what an integration test works with.
type bundle struct {
	db    dbtest.DB
	svc   *payments.Service
	clock *fakeClock
	// conn is the Stripe connector of a bundle made by stripeSetup.
	conn processor.Processor
}

const testTTL = 24 * time.Hour

func setup(t *testing.T, db dbtest.DB) *bundle {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.UTC)}
	svc := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: clock.Now})
	return &bundle{db: db, svc: svc, clock: clock}
}

func mustService(t testing.TB, db *gorm.DB, cfg payments.Config) *payments.Service {
	t.Helper()
	svc, err := payments.NewService(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// fakeClock is a clock tests move by hand, so TTL tests never sleep.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Each reading moves on a microsecond, as a real clock would, so rows
	// created one after another have distinct times.
	c.now = c.now.Add(time.Microsecond)
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func request(client, key, amount, currency string, method payments.Method) payments.CreateRequest {
	return payments.CreateRequest{ClientID: client, IdempotencyKey: key, Amount: amount, Currency: currency, Method: method,
		Origin: payments.Origin{Transport: "test"}}
}

func pix(key string) payments.CreateRequest {
	return request("client-1", key, "10.50", "BRL", payments.MethodPix)
}

func (b *bundle) mustCreate(t *testing.T, req payments.CreateRequest) payments.CreateResult {
	t.Helper()
	res, err := b.svc.Create(t.Context(), req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return res
}

// count returns the number of rows in a table.
func (b *bundle) count(t *testing.T, table string) int64 {
	t.Helper()
	var n int64
	if err := b.db.Gorm.Table(table).Count(&n).Error; err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// rowCounts is the size of every table, to show that nothing was written.
func (b *bundle) rowCounts(t *testing.T) [3]int64 {
	t.Helper()
	return [3]int64{b.count(t, "payments"), b.count(t, "idempotency_keys"), b.count(t, "idempotency_attempts")}
}

func (b *bundle) outcomes(t *testing.T, paymentID string) []payments.Outcome {
	t.Helper()
	attempts := b.attempts(t, paymentID)
	out := make([]payments.Outcome, len(attempts))
	for i, a := range attempts {
		out[i] = a.Outcome
	}
	return out
}

// attempts returns a payment's attempts, oldest first.
func (b *bundle) attempts(t *testing.T, paymentID string) []payments.Attempt {
	t.Helper()
	p := b.mustGet(t, paymentID)
	attempts, err := b.svc.Attempts(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return attempts
}

func (b *bundle) mustGet(t *testing.T, id string) payments.Payment {
	t.Helper()
	p, err := b.svc.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return p
}
