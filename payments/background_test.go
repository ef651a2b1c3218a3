package payments_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestBackgroundServices: the clock sync and the sweeper under the
// server's background contract (internal/startstop). The clock sync's
// Start returns once the database's clock has been measured: an instance
// whose clock runs an hour fast stamps its first payment with the
// database's time. Stop returns once each has stopped (TestMain's goleak
// finds nothing left), and a second Stop changes nothing.
func TestBackgroundServices(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	fast := func() time.Time { return time.Now().Add(time.Hour) }
	svc := mustService(t, db.Gorm, payments.Config{Now: fast, ClockOffset: database.ClockOffset(db.Gorm)})
	quiet := slog.New(slog.DiscardHandler)
	clock, sweeper := svc.ClockSync(quiet), svc.Sweeper(time.Minute, quiet)
	if err := clock.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := sweeper.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Create(t.Context(), request("client-1", "clock-sync", "10", "BRL", payments.MethodPix))
	if err != nil {
		t.Fatal(err)
	}
	if off := time.Until(res.Payment.CreatedAt); off.Abs() > 5*time.Second {
		t.Errorf("the first payment after Start is stamped %s off the database's clock, want in step", off)
	}
	for range 2 {
		sweeper.Stop()
		clock.Stop()
	}
	if clock.Running() || sweeper.Running() {
		t.Error("still running after Stop")
	}
}
