package database_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestClockOffset: PostgreSQL's clock is measured against the one given; a
// measurement whose round trips are too slow to trust fails (and the
// service keeps its last offset); SQLite shares the server's clock and has
// nothing to measure.
func TestClockOffset(t *testing.T) {
	t.Parallel()
	if database.ClockOffset(dbtest.SQLite(t).Gorm) != nil {
		t.Error("SQLite has a clock offset to measure")
	}
	measure := database.ClockOffset(dbtest.Postgres(t).Gorm)
	here, err := measure(t.Context(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	behind, err := measure(t.Context(), func() time.Time { return time.Now().Add(-time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	if d := behind - here - time.Hour; d > 100*time.Millisecond || d < -100*time.Millisecond {
		t.Errorf("a clock an hour behind measured %s behind the database, this machine's %s", behind, here)
	}
	var at time.Time
	slow := func() time.Time { at = at.Add(time.Second); return at } // every round trip takes a second
	if _, err := measure(t.Context(), slow); err == nil || !strings.Contains(err.Error(), "too slowly") {
		t.Errorf("a measurement with 1 s round trips: %v, want it refused", err)
	}
}
