package database

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/payments"
)

// ClockOffset measures how far PostgreSQL's clock is ahead of now, taking
// the midpoint of one round trip that reads clock_timestamp(): the error is
// within half that round trip. Instances keep their idempotency keys' ages
// by it (payments/clock.go). SQLite runs on the server's own machine, on
// its clock: nil.
func ClockOffset(db *gorm.DB) payments.ClockOffset {
	if db.Dialector.Name() != "postgres" {
		return nil
	}
	return func(ctx context.Context, now func() time.Time) (time.Duration, error) {
		var dbNow time.Time
		before := now()
		err := db.WithContext(ctx).Raw(`SELECT clock_timestamp()`).Row().Scan(&dbNow)
		after := now()
		if err != nil {
			return 0, err
		}
		return dbNow.Sub(before.Add(after.Sub(before) / 2)), nil
	}
}
