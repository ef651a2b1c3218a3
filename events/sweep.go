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
//   - the deliveries still kept: those pending, and those FAILED whose
//     last attempt is younger than FailedKeep; and the events of every
//     delivery left pending or FAILED without a stored body (a FAILED one
//     stores the body it sent, which a resend sends again; only those
//     that failed before schema version 12 build it from their event),
//     so that a resend, which may come at any moment of a sweep, never
//     arms a delivery whose event the sweep then deletes;
//   - the newest event (on PostgreSQL, the newest pass), whatever its age,
//     so that the highest id given never falls and no id is given twice.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	c := s.cutoffsAt(s.now())
	if _, err := s.store.sweepDeliveries(ctx, c); err != nil {
		return 0, err
	}
	return s.store.sweepEvents(ctx, c)
}

// cutoffs are the times a sweep measures ages by.
type cutoffs struct {
	// old: events, and finished deliveries, made before it may go.
	old time.Time
	// failed: a FAILED delivery whose last attempt (else its creation) is
	// at or after it is kept, with its attempts (and its event, if it
	// failed before bodies were stored, for as long as it is kept).
	failed time.Time
}

// cutoffsAt are the cutoffs of a sweep run at now: Retention and
// FailedKeep before it.
func (s *Service) cutoffsAt(now time.Time) cutoffs {
	return cutoffs{old: now.Add(-s.retention), failed: now.Add(-s.failedKeep)}
}
