package intake

import (
	"context"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/startstop"
)

// retryBatch is how many unapplied events one round tries: a page of
// Retry's walk over them all.
const retryBatch = 64

// Retrier is the background service that applies, every interval, the
// stored events that could not be applied yet (their payment was not
// recorded when they came), until stopped.
func (s *Service) Retrier(interval time.Duration, log *slog.Logger) *startstop.Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fails := &logrepeat.Failures{Logger: log, What: "applying stored processor events"}
	return startstop.Every(max(interval, 10*time.Millisecond), func(ctx context.Context) {
		if _, err := s.Retry(ctx, retryBatch); ctx.Err() == nil {
			fails.Report(err)
		}
	})
}
