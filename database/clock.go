package database

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// clockReadings is how many times ClockOffset reads the database's clock;
// it keeps the reading with the shortest round trip, whose midpoint is the
// closest to the moment the database read its clock.
const clockReadings = 5

// maxClockRoundTrip is the slowest round trip a reading may take: a
// reading's error is up to half of it.
const maxClockRoundTrip = 200 * time.Millisecond

// ClockOffset measures how far PostgreSQL's clock is ahead of now: on a
// connection of its own (so that waiting for one is not timed), it reads
// clock_timestamp() several times and keeps the reading with the shortest
// round trip, taking the database's time to be that of the round trip's
// midpoint. Its error is within half that round trip; a measurement whose
// best round trip is slower than maxClockRoundTrip fails, and the service
// keeps the offset it had. Instances keep their idempotency keys' ages by
// it (payments/clock.go), whose payments.ClockOffset this is: the type is
// spelled out so that storage does not import the payments package.
// SQLite runs on the server's own machine, on its clock: nil.
func ClockOffset(db *gorm.DB) func(ctx context.Context, now func() time.Time) (time.Duration, error) {
	measure, err := sqlq.Pick(db, measureClock, func(*sqlq.Lite) clockFunc { return nil })
	if err != nil {
		return nil
	}
	return measure
}

type clockFunc = func(ctx context.Context, now func() time.Time) (time.Duration, error)

// measureClock reads PostgreSQL's clock as ClockOffset says.
func measureClock(pg *sqlq.PG) clockFunc {
	return func(ctx context.Context, now func() time.Time) (time.Duration, error) {
		best, offset := time.Duration(-1), time.Duration(0)
		err := pg.Conn(ctx, func(c *pgx.Conn) error {
			for i := range clockReadings + 1 { // the first one warms the connection up
				var dbNow time.Time
				before := now()
				if err := c.QueryRow(ctx, postgresSQL.SQL("clock")).Scan(&dbNow); err != nil {
					return err
				}
				after := now()
				if trip := after.Sub(before); i > 0 && (best < 0 || trip < best) {
					best, offset = trip, dbNow.Sub(before.Add(trip/2))
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if best > maxClockRoundTrip {
			return 0, fmt.Errorf("the database's clock answered in %s at best, too slowly to be read", best)
		}
		return offset, nil
	}
}
