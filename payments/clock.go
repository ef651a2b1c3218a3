package payments

import (
	"context"
	"fmt"
	"time"
)

// A key's age decides whether a retry replays or pays again, and instances
// write and judge it with their own clocks. Two instances whose clocks
// disagree by more than the time left on a key would disagree on whether it
// has expired, and a retry that reaches the fast one would be handled as
// new. So a Service given Config.ClockOffset keeps its clock in step with
// the database's, the one clock every instance shares: it measures how far
// the database's clock is ahead of its own (SyncClock, at start and then
// every sweep) and adds that to every time it writes or compares. Then the
// error between instances is the measurement's, within half a round trip
// to the database, whatever their own clocks say.

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
