package events

// ReplaysInProgress is how many subscriptions hold a page of the outbox
// now: at most Options.ReplayPages. Only tests ask: they wait for a replay
// to hold its slot instead of sleeping.
func (s *Service) ReplaysInProgress() int { return len(s.replay.slots) }
