package intake

import (
	"context"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/internal/startstop"
)

// retryBatch is how many unapplied events one round applies.
const retryBatch = 64

// Retrier applies, every interval, the stored events that could not be
// applied yet (their payment was not recorded when they came), until
// stopped (internal/startstop).
type Retrier struct {
	in       *Service
	interval time.Duration
	log      *slog.Logger
	base     startstop.Base
}

// Retrier is the background service that runs Retry every interval.
func (s *Service) Retrier(interval time.Duration, log *slog.Logger) *Retrier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Retrier{in: s, interval: max(interval, 10*time.Millisecond), log: log}
}

// Start starts retrying in the background.
func (r *Retrier) Start(ctx context.Context) error {
	return r.base.StartFunc(ctx, nil, func(ctx context.Context) {
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := r.in.Retry(ctx, retryBatch); err != nil && ctx.Err() == nil {
				r.log.Warn("applying stored processor events", "err", err)
			}
		}
	})
}

// Stop stops it and waits for a round under way.
func (r *Retrier) Stop() { r.base.Stop() }

var _ startstop.Service = (*Retrier)(nil)
