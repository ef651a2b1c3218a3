package intake

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/startstop"
)

// Retention is how long a stored event is kept after CMPay received it.
// Events are whole payloads, and may carry the payer's billing details (a
// boleto payer's tax id), so they are not kept for good. What reads them
// needs far less: the dedupe by id against Stripe's redeliveries (Stripe
// retries for up to 3 days) and Retry (RetryFor, a day). 30 days is as
// long as Stripe itself keeps an event retrievable, and keeps a month of
// them on the admin's payment page.
const Retention = 30 * 24 * time.Hour

// SweepBatchSize is how many events one statement deletes at most, so that
// a sweep never holds many locks or writes a large transaction.
const SweepBatchSize = 1000

// Sweeper deletes the stored events older than Retention. It needs no
// webhook secret: events stored while one was set are swept after it is
// removed too.
type Sweeper struct {
	db  sqlq.DB
	q   sqlq.Statements
	now func() time.Time
}

var (
	postgresSQL = sqlq.MustLoad(sqlFiles, "sql/postgres.sql")
	sqliteSQL   = sqlq.MustLoad(sqlFiles, "sql/sqlite.sql")
)

// NewSweeper returns a Sweeper of the events stored in db, by the clock
// now (time.Now when nil).
func NewSweeper(db *gorm.DB, now func() time.Time) (*Sweeper, error) {
	if now == nil {
		now = time.Now
	}
	s, err := sqlq.Pick(db,
		func(pg *sqlq.PG) *Sweeper { return &Sweeper{db: pg, q: postgresSQL, now: now} },
		func(lite *sqlq.Lite) *Sweeper { return &Sweeper{db: lite, q: sqliteSQL, now: now} })
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	return s, nil
}

// Sweep deletes the events received more than Retention ago, oldest first,
// in batches of at most batchSize (SweepBatchSize when not positive), and
// returns how many it deleted. It is safe beside live traffic and on many
// instances at once: on PostgreSQL each batch skips rows another
// transaction holds.
func (s *Sweeper) Sweep(ctx context.Context, batchSize int) (int64, error) {
	if batchSize <= 0 {
		batchSize = SweepBatchSize
	}
	before := s.now().UTC().Add(-Retention)
	var total int64
	for {
		n, err := s.db.Exec(ctx, s.q.SQL("sweep_events"), before, batchSize)
		if err != nil {
			return total, fmt.Errorf("sweep processor events: %w", err)
		}
		total += n
		if n < int64(batchSize) || ctx.Err() != nil {
			return total, nil
		}
	}
}

// Runner returns the background service that sweeps every interval (with
// startstop.Jittered's jitter and floor, as the sweep of idempotency keys)
// until stopped.
func (s *Sweeper) Runner(interval time.Duration, log *slog.Logger) *startstop.Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fails := &logrepeat.Failures{Logger: log, What: "sweep old processor events", Level: slog.LevelError}
	return startstop.Jittered(interval, func(ctx context.Context) {
		n, err := s.Sweep(ctx, SweepBatchSize)
		if ctx.Err() == nil {
			fails.Report(err)
		}
		if err != nil {
			return
		}
		if n > 0 {
			log.Info("swept old processor events", "deleted", n)
		}
	})
}
