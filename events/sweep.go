package events

import (
	"context"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// runSweeper deletes old events and finished deliveries every sweep
// interval, on the leader only (one instance sweeps, none waits on
// another's deletes).
func (s *Service) runSweeper(ctx context.Context) {
	tick := time.NewTicker(s.sweepEvery)
	defer tick.Stop()
	fails := &logrepeat.Failures{Logger: s.log, What: "events: sweep old events"}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !s.Leader() {
			continue
		}
		if _, err := s.Sweep(ctx); ctx.Err() == nil {
			fails.Report(err)
		}
	}
}

// Sweep deletes, oldest first and in batches, the events older than the
// retention and the finished webhook deliveries (and their attempts)
// older than it, and says how many events it deleted. It keeps:
//   - events not yet numbered (on SQLite, not yet given their deliveries);
//   - events a delivery is still pending for;
//   - the newest event (on PostgreSQL, the newest pass), whatever its age,
//     so that the highest id given never falls and no id is given twice.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	cutoff := s.now().Add(-s.retention)
	if err := s.store.sweepDeliveries(ctx, cutoff); err != nil {
		return 0, err
	}
	return s.store.sweepEvents(ctx, cutoff)
}
