package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestKeyAgeByTheDatabasesClock: an instance whose clock runs 4 s fast,
// with a key TTL of 3 s, gets a retry at once of a request made on an
// instance with the right clock. By its own clock the key expired, and
// the retry would be a second payment; in step with the database's clock
// (Config.ClockOffset) it is a replay.
func TestKeyAgeByTheDatabasesClock(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	const ttl, skew = 3 * time.Second, 4 * time.Second
	fast := func() time.Time { return time.Now().Add(skew) }
	right := mustService(t, db.Gorm, payments.Config{KeyTTL: ttl})
	inStep := mustService(t, db.Gorm, payments.Config{KeyTTL: ttl, Now: fast, ClockOffset: database.ClockOffset(db.Gorm)})
	alone := mustService(t, db.Gorm, payments.Config{KeyTTL: ttl, Now: fast})
	offset, err := inStep.SyncClock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The database may run on another machine, with its own clock: compare
	// with a reading against this machine's.
	reference, err := database.ClockOffset(db.Gorm)(t.Context(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if d := offset - (reference - skew); d > 200*time.Millisecond || d < -200*time.Millisecond {
		t.Fatalf("measured the database's clock %s ahead of one running %s fast, and %s ahead of this machine's", offset, skew, reference)
	}

	for _, tc := range []struct {
		name       string
		retryOn    *payments.Service
		wantReplay bool
	}{
		{"in step with the database", inStep, true},
		{"on its own clock (the fault this guards against)", alone, false},
	} {
		key := "clock-" + tc.name
		first, err := right.Create(t.Context(), request("client-1", key, "10", "BRL", payments.MethodPix))
		if err != nil {
			t.Fatal(err)
		}
		retry, err := tc.retryOn.Create(t.Context(), request("client-1", key, "10", "BRL", payments.MethodPix))
		if err != nil {
			t.Fatal(err)
		}
		if replayed := retry.Replayed && retry.Payment.ID == first.Payment.ID; replayed != tc.wantReplay {
			t.Errorf("%s: the retry replayed: %v (payment %s, first %s), want %v", tc.name, replayed, retry.Payment.ID,
				first.Payment.ID, tc.wantReplay)
		}
	}
}
