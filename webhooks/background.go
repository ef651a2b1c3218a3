package webhooks

import "context"

// Start runs the dispatcher (Run) in the background and returns at once;
// it does nothing if the dispatcher runs already. It implements the
// server's one contract for background services (internal/startstop).
func (s *Service) Start(ctx context.Context) error {
	return s.background.StartFunc(ctx, nil, s.Run)
}

// Stop ends what Start started and returns once it has stopped: the
// attempts in flight have been answered (within their timeout) and
// recorded.
func (s *Service) Stop() { s.background.Stop() }
