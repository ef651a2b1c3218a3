package staff

// WaitTouches returns once no write of a session's last use is in flight.
func (s *Store) WaitTouches() { s.touches.Wait() }
