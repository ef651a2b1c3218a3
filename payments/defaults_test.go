package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestDefaultKeyTTL: without a KeyTTL (IDEMPOTENCY_KEY_TTL unset) a key is
// remembered for the contract's 24 hours, and forgotten after them.
func TestDefaultKeyTTL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
		b := &bundle{db: db, svc: mustService(t, db.Gorm, payments.Config{Now: clock.Now}), clock: clock}
		first := b.mustCreate(t, pix("default-ttl"))
		clock.Advance(24*time.Hour - time.Second)
		if res := b.mustCreate(t, pix("default-ttl")); !res.Replayed || res.Payment.ID != first.Payment.ID {
			t.Fatalf("a second before 24h: %+v, want a replay of %s", res, first.Payment.ID)
		}
		clock.Advance(2 * time.Second)
		if res := b.mustCreate(t, pix("default-ttl")); res.Replayed {
			t.Fatalf("a second after 24h: %+v, want a new payment", res)
		}
	})
}
