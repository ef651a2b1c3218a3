package payments

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/startstop"
)

// SweepBatchSize is how many expired keys one statement deletes at most, so
// that a sweep never holds many locks or writes a large transaction.
const SweepBatchSize = 1000

// DefaultSweepInterval is how often expired keys are swept when
// SWEEP_INTERVAL is not set; the server's other sweepers (old events, old
// processor events) take the same interval.
const DefaultSweepInterval = time.Minute

// SweepGrace is how long past its TTL a key is kept before the sweep
// deletes it. Requests decide expiry by the TTL exactly (and take expired
// keys over); the sweep only collects garbage, by its own instance's clock.
// Were it exact, an instance whose clock ran ahead could delete a key the
// others still hold live, and a retry would pay twice.
const SweepGrace = 10 * time.Minute

// SweepExpiredKeys deletes the keys older than the TTL plus SweepGrace in
// batches of at most batchSize and returns how many it deleted. The payments the keys created,
// and their attempts, stay.
//
// It is safe to run on many instances at once and beside live traffic: on
// PostgreSQL each batch skips rows another transaction holds (a request
// taking over an expired key, another sweep), and the delete re-checks the
// age of each row it removes, so a key renewed in between survives.
func (s *Service) SweepExpiredKeys(ctx context.Context, batchSize int) (int64, error) {
	if batchSize <= 0 {
		batchSize = SweepBatchSize
	}
	expiredBefore := s.now().Add(-s.keyTTL - SweepGrace)
	var total int64
	for {
		n, err := s.store.sweepKeys(ctx, expiredBefore, batchSize)
		if err != nil {
			return total, fmt.Errorf("sweep expired keys: %w", err)
		}
		total += n
		if n < int64(batchSize) || ctx.Err() != nil {
			return total, nil
		}
	}
}

// Sweeper returns the background service that sweeps expired keys every
// interval (zero: DefaultSweepInterval), with startstop.Jittered's jitter,
// until stopped.
func (s *Service) Sweeper(interval time.Duration, log *slog.Logger) *startstop.Runner {
	fails := &logrepeat.Failures{Logger: log, What: "sweep expired idempotency keys", Level: slog.LevelError}
	return startstop.Jittered(cmp.Or(interval, DefaultSweepInterval), func(ctx context.Context) {
		n, err := s.SweepExpiredKeys(ctx, SweepBatchSize)
		if ctx.Err() == nil {
			fails.Report(err)
		}
		if err != nil {
			return
		}
		if n > 0 {
			log.Info("swept expired idempotency keys", "deleted", n)
		}
	})
}
