package events

import "context"

// Start runs the Service (Run) in the background and returns at once; it
// does nothing if the Service runs already. It implements the server's
// one contract for background services (internal/startstop).
func (s *Service) Start(ctx context.Context) error {
	return s.background.StartFunc(ctx, nil, s.Run)
}

// Stop ends what Start started and returns once it has stopped: every
// subscription has ended with ErrClosed.
func (s *Service) Stop() { s.background.Stop() }
