package events

// ReplaysInProgress is how many subscriptions hold a page of the outbox
// now: at most Options.ReplayPages. Only tests ask: they wait for a replay
// to hold its slot instead of sleeping.
func (s *Service) ReplaysInProgress() int { return len(s.replay.slots) }

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
