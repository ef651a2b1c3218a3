package events

// LiveSubscribers is how many subscriptions the hub hands live events to:
// what a test waits for instead of sleeping until a new one has its place.
func (s *Service) LiveSubscribers() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return len(s.hub.subs)
}
