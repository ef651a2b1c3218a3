package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/webhooks"
)

// newEvents builds the outbox's sequencer and fan-out, and the webhook
// dispatcher. Events are kept for the key TTL (the contract's minimum for
// `after`) or for as long as a webhook delivery may be retried, whichever
// is longer, and an hour besides.
func newEvents(db *gorm.DB, cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*events.Service, *webhooks.Service, error) {
	ev, err := events.New(db, events.Options{
		Retention:     max(cfg.KeyTTL, cfg.WebhookMaxAge) + time.Hour,
		SweepInterval: cfg.SweepInterval,
		Logger:        log,
	})
	if err != nil {
		return nil, nil, err
	}
	wh, err := webhooks.New(db, ev, webhooks.Config{
		RetryMin:     cfg.WebhookRetryMin,
		MaxAge:       cfg.WebhookMaxAge,
		AllowPrivate: cfg.WebhookAllowPrivate,
		Logger:       log,
		Hooks:        m.WebhookHooks(),
		// Checked by config.Load: either empty or webhooks.KeySize bytes.
		SecretKey:         cfg.WebhookSecretKey,
		PreviousSecretKey: cfg.WebhookSecretKeyPrevious,
	})
	if err != nil {
		return nil, nil, err
	}
	m.WatchBacklog(wh.Backlog)
	if err := sealWebhookSecrets(wh, log); err != nil {
		return nil, nil, err
	}
	return ev, wh, nil
}

// sealWebhookSecrets seals the signing secrets stored before
// WEBHOOK_SECRET_KEY was set, or under the previous key. Secrets no key
// opens do not stop the server: the API does not need them, and their
// deliveries fail, and are retried, until the right key is given; the log
// says so now rather than at the first delivery.
func sealWebhookSecrets(wh *webhooks.Service, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := wh.SealSecrets(ctx)
	if n > 0 {
		log.Info("webhook signing secrets sealed under WEBHOOK_SECRET_KEY", "endpoints", n)
	}
	if errors.Is(err, webhooks.ErrSecretKey) {
		log.Error("webhook signing secrets that no key opens: their deliveries fail until the key they were sealed with "+
			"is given (as WEBHOOK_SECRET_KEY, or as WEBHOOK_SECRET_KEY_PREVIOUS beside a new key)", "error", err)
		return nil
	}
	return err
}

// runEvents runs the events service and the webhook dispatcher. Both stop
// as soon as the server starts shutting down: subscriptions end (so that
// Server-Sent Events streams, which the HTTP server waits for, close), and
// the dispatcher claims nothing new. The function it returns waits for
// them: for the attempts in flight to be answered (at most their 10 s
// timeout) and recorded; a delivery whose outcome is not recorded is
// attempted again by another instance once its lease runs out.
func runEvents(srv *http.Server, ev *events.Service, wh *webhooks.Service) (wait func()) {
	ctx, cancel := context.WithCancel(context.Background())
	srv.RegisterOnShutdown(cancel)
	var wg sync.WaitGroup
	wg.Go(func() { ev.Run(ctx) })
	wg.Go(func() { wh.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
