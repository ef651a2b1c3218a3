package payments_test

import (
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

func TestKeyExpiry(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.mustCreate(t, pix("k1"))

		// Just inside the TTL the key is remembered.
		b.clock.Advance(testTTL - time.Second)
		if res := b.mustCreate(t, pix("k1")); !res.Replayed || res.Payment.ID != first.Payment.ID {
			t.Fatalf("inside the TTL: %+v, want a replay of %s", res, first.Payment.ID)
		}

		// Past it, the same request is a new payment, and so is a request
		// with another payload: the old key is forgotten.
		b.clock.Advance(2 * time.Second)
		second := b.mustCreate(t, pix("k1"))
		if second.Replayed || second.Payment.ID == first.Payment.ID {
			t.Fatalf("past the TTL: %+v, want a new payment", second)
		}
		if res := b.mustCreate(t, pix("k1")); !res.Replayed || res.Payment.ID != second.Payment.ID {
			t.Fatalf("retry of the new payment: %+v, want a replay of %s", res, second.Payment.ID)
		}

		// The old payment and its history stay.
		old, err := b.svc.Get(t.Context(), first.Payment.ID)
		if err != nil {
			t.Fatalf("old payment: %v", err)
		}
		if old.ReplayCount != 1 {
			t.Errorf("old payment ReplayCount = %d, want 1", old.ReplayCount)
		}
		if got := b.outcomes(t, first.Payment.ID); len(got) != 2 {
			t.Errorf("old payment's attempts = %v, want its 2", got)
		}
		if got := b.rowCounts(t); got != [3]int64{2, 1, 4} {
			t.Errorf("payments, keys, attempts = %v, want [2 1 4]", got)
		}
	})
}

func TestKeyExpiryRace(t *testing.T) {
	t.Parallel()
	const n = 40
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.mustCreate(t, pix("k1"))
		b.clock.Advance(testTTL + time.Second)

		// Many requests race to take over the expired key: one new payment.
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := b.svc.Create(t.Context(), pix("k1"))
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				ids[i] = res.Payment.ID
			})
		}
		wg.Wait()
		for i := range n {
			if ids[i] != ids[0] || ids[i] == first.Payment.ID {
				t.Fatalf("request %d got %s, request 0 %s, the expired payment is %s", i, ids[i], ids[0], first.Payment.ID)
			}
		}
		if n := b.count(t, "payments"); n != 2 {
			t.Errorf("%d payments, want 2", n)
		}
	})
}

func TestSweepExpiredKeys(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		var old []payments.Payment
		for _, key := range []string{"a", "b", "c", "d", "e", "f", "g"} {
			old = append(old, b.mustCreate(t, pix(key)).Payment)
		}
		b.clock.Advance(testTTL / 2)
		live := b.mustCreate(t, pix("live"))
		// Past the TTL but within the sweep's grace: expired, yet kept.
		b.clock.Advance(testTTL/2 + time.Second)
		if n, err := b.svc.SweepExpiredKeys(t.Context(), 3); err != nil || n != 0 {
			t.Fatalf("sweep within the grace period deleted %d keys (%v), want 0", n, err)
		}
		b.clock.Advance(payments.SweepGrace)

		deleted, err := b.svc.SweepExpiredKeys(t.Context(), 3) // three batches: 3, 3, 1
		if err != nil {
			t.Fatal(err)
		}
		if deleted != 7 {
			t.Errorf("swept %d keys, want 7", deleted)
		}
		if got := b.rowCounts(t); got != [3]int64{8, 1, 8} {
			t.Errorf("payments, keys, attempts = %v, want [8 1 8]: payments and history stay", got)
		}
		if again, err := b.svc.SweepExpiredKeys(t.Context(), 3); err != nil || again != 0 {
			t.Errorf("second sweep: %d, %v; want 0", again, err)
		}
		// The live key still replays; a swept one creates anew.
		if res := b.mustCreate(t, pix("live")); !res.Replayed || res.Payment.ID != live.Payment.ID {
			t.Errorf("live key after the sweep: %+v, want a replay", res)
		}
		if res := b.mustCreate(t, pix("a")); res.Replayed || res.Payment.ID == old[0].ID {
			t.Errorf("swept key: %+v, want a new payment", res)
		}
	})
}

// Sweeps running on several instances at once, beside requests that take
// over the same expired keys, lose no live key and create no duplicate.
func TestSweepConcurrentWithTraffic(t *testing.T) {
	t.Parallel()
	const keys = 30
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for k := range keys {
			b.mustCreate(t, pix(string(rune('A'+k))))
		}
		b.clock.Advance(testTTL + payments.SweepGrace + time.Second)

		renewed := make([]string, keys)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := b.svc.SweepExpiredKeys(t.Context(), 4); err != nil {
					t.Error(err)
				}
			})
		}
		for k := range keys {
			wg.Go(func() {
				res, err := b.svc.Create(t.Context(), pix(string(rune('A'+k))))
				if err != nil {
					t.Error(err)
					return
				}
				renewed[k] = res.Payment.ID
			})
		}
		wg.Wait()

		// Every renewed key is live and replays its new payment.
		for k := range keys {
			res := b.mustCreate(t, pix(string(rune('A'+k))))
			if !res.Replayed || res.Payment.ID != renewed[k] {
				t.Errorf("key %c: %+v, want a replay of %s", 'A'+k, res, renewed[k])
			}
		}
		if got := b.count(t, "payments"); got != 2*keys {
			t.Errorf("%d payments, want %d", got, 2*keys)
		}
	})
}
