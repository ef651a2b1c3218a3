package payments

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/startstop"
)

// ClockSyncInterval is how often ClockSync measures the database's
// clock again: one short query.
const ClockSyncInterval = 10 * time.Second

// A key's age decides whether a retry replays or pays again, and instances
// write and judge it with their own clocks. Two instances whose clocks
// disagree by more than the time left on a key would disagree on whether it
// has expired, and a retry that reaches the fast one would be handled as
// new. So a Service given Config.ClockOffset keeps its clock in step with
// the database's, the one clock every instance shares: it measures how far
// the database's clock is ahead of its own (SyncClock: once before serving,
// then every ClockSyncInterval: ClockSync) and adds that to every time
// the payments package writes or compares. Then the error between
// instances is the measurement's, within half a round trip to the database,
// whatever their own clocks say; a clock stepped between two measurements
// is off until the next one.

// ClockOffset measures how far the database's clock is ahead of now.
type ClockOffset func(ctx context.Context, now func() time.Time) (time.Duration, error)

// SyncClock measures the database's clock against the service's and keeps
// the difference, which it returns. Without Config.ClockOffset it does
// nothing.
func (s *Service) SyncClock(ctx context.Context) (time.Duration, error) {
	if s.clockOffset == nil {
		return 0, nil
	}
	d, err := s.clockOffset(ctx, s.clock)
	if err != nil {
		return time.Duration(s.offset.Load()), fmt.Errorf("sync clock: %w", err)
	}
	s.offset.Store(int64(d))
	return d, nil
}

// ClockSync measures the database's clock as a background service: its
// Start takes the first measurement, so that keys' ages are judged by it
// from the first request, and returns; the next ones follow every
// ClockSyncInterval until Stop. A failure is not fatal: the last offset
// (none at first) is kept until a measurement succeeds. Without
// Config.ClockOffset it does nothing.
func (s *Service) ClockSync(log *slog.Logger) *startstop.Runner {
	r := &clockReport{log: log, fails: &logrepeat.Failures{Logger: log,
		What: "measure the database's clock; the last offset is kept"}}
	return startstop.InitFunc(func(ctx context.Context) error {
		if s.clockOffset == nil {
			return nil
		}
		r.ctx = ctx
		first, cancel := context.WithTimeout(ctx, 5*time.Second)
		r.tell(s.SyncClock(first))
		cancel()
		return nil
	}, func(ctx context.Context) {
		if s.clockOffset == nil {
			return
		}
		r.ctx = ctx
		tick := time.NewTicker(ClockSyncInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.tell(s.SyncClock(ctx))
		}
	})
}

// clockReport says when a measurement first fails, and when this
// instance's clock is more than a second off the database's, once for
// each second the offset moves: not every ClockSyncInterval.
type clockReport struct {
	ctx   context.Context // a measurement failing once it ends is not told
	log   *slog.Logger
	fails *logrepeat.Failures
	told  time.Duration
}

// tell takes what SyncClock returned.
func (r *clockReport) tell(d time.Duration, err error) {
	if r.ctx.Err() == nil {
		r.fails.Report(err)
	}
	if err != nil {
		return
	}
	if d.Abs() > time.Second && (d-r.told).Abs() > time.Second {
		r.log.Warn("this instance's clock is off the database's; keys' ages are judged by the database's", "offset", d.String())
		r.told = d
	}
}
