package events

import (
	"context"
	"time"
)

// ReplaysInProgress is how many subscriptions hold a page of the outbox
// now: at most Options.ReplayPages. Tests wait for a replay to hold its
// slot instead of sleeping.
func (s *Service) ReplaysInProgress() int {
	reading, _ := s.Replays()
	return reading
}

// Waiting is how many live events wait in the buffers of the hub's
// subscribers, not yet taken by their subscriptions.
func (s *Service) Waiting() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	n := 0
	for sb := range s.hub.subs {
		n += len(sb.ch)
	}
	return n
}

// OnSweepRead has f run each time the events sweep has read which events
// are old, before it deletes them.
func (s *Service) OnSweepRead(f func()) {
	switch st := s.store.(type) {
	case *postgresStore:
		st.sweepRead.Store(&f)
	case *sqliteStore:
		st.sweepRead.Store(&f)
	}
}

// SweepEventsAsOf runs the events half of a sweep alone, as of now: the
// deliveries are left as they are, as if the deliveries half had not
// reached them.
func (s *Service) SweepEventsAsOf(ctx context.Context, now time.Time) (int64, error) {
	return s.store.sweepEvents(ctx, s.cutoffsAt(now))
}
