package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// newEvents builds the outbox's sequencer and fan-out, and the webhook
// dispatcher.
func newEvents(db *gorm.DB, cfg config.Config, m *metrics.Metrics, log *slog.Logger) (*events.Service, *webhooks.Service, error) {
	opts := eventsOptions(cfg)
	opts.Logger = log
	ev, err := events.New(db, opts)
	if err != nil {
		return nil, nil, err
	}
	wh, err := webhooks.New(db, ev, webhooks.Config{
		RetryMin:           cfg.WebhookRetryMin,
		MaxAge:             cfg.WebhookMaxAge,
		AttemptTimeout:     cfg.WebhookAttemptTimeout,
		AllowPrivate:       cfg.WebhookAllowPrivate,
		EndpointsPerClient: cfg.WebhookEndpointsPerClient,
		Logger:             log,
		Hooks:              m.WebhookHooks(),
		// Checked by config.FromEnv: either empty or config.SecretKeySize
		// (webhooks.KeySize) bytes.
		SecretKey:         cfg.WebhookSecretKey,
		PreviousSecretKey: cfg.WebhookSecretKeyPrevious,
	})
	if err != nil {
		return nil, nil, err
	}
	m.WatchBacklog(wh.Backlog)
	m.WatchSubscriptions(ev.Subscribers)
	m.WatchReplays(ev.Replays)
	if err := sealWebhookSecrets(wh, len(cfg.WebhookSecretKey) > 0, log); err != nil {
		return nil, nil, err
	}
	return ev, wh, nil
}

// sealWebhookSecrets seals the signing secrets stored before
// WEBHOOK_SECRET_KEY was set, or under the previous key, and says where
// they stand. Sealed secrets without any key stop the start: it is most
// likely a key that did not reach the server, every delivery would fail,
// and new secrets would be stored unsealed. Anything else does not: the
// API does not need the secrets, and the next start carries on sealing.
func sealWebhookSecrets(wh *webhooks.Service, keyGiven bool, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := wh.SealSecrets(ctx)
	if err != nil && !keyGiven {
		// Whether sealed secrets wait for a key is exactly what could not
		// be read.
		return fmt.Errorf("webhook signing secrets: %w", err)
	}
	if err != nil {
		log.Warn("webhook signing secrets: sealing stopped, the next start carries on", "error", err, "sealed_now", r.Sealed)
		return nil
	}
	if r.Unopened > 0 && !keyGiven {
		return fmt.Errorf("%d webhook signing secrets are sealed and WEBHOOK_SECRET_KEY is not set: "+
			"give the key they were sealed with (without it no delivery can be signed)", r.Unopened)
	}
	if keyGiven {
		log.Info("webhook signing secrets", "sealed_now", r.Sealed, "sealed_before", r.Kept, "as_given", r.AsGiven,
			"unopened", r.Unopened)
	}
	if r.Unopened > 0 {
		log.Error("webhook signing secrets that no key given opens: their deliveries fail until the key they were sealed "+
			"with is given (as WEBHOOK_SECRET_KEY, or as WEBHOOK_SECRET_KEY_PREVIOUS beside a new key)", "unopened", r.Unopened)
	}
	return nil
}

// eventsOptions is the outbox's configuration. Events are kept for the key
// TTL (the contract's minimum for `after`) or for as long as a webhook
// delivery may be retried, whichever is longer, and an hour besides:
// worked out here from what the payments and webhooks packages will use,
// their defaults included, since the events package knows neither. A
// FAILED delivery is kept longer, WEBHOOK_FAILED_KEEP (unset: a week)
// after its last attempt, with the body it sent, for a resend.
func eventsOptions(cfg config.Config) events.Options {
	keyTTL := cmp.Or(cfg.KeyTTL, payments.DefaultKeyTTL)
	maxAge := cmp.Or(cfg.WebhookMaxAge, webhooks.DefaultMaxAge)
	return events.Options{
		Retention:     max(keyTTL, maxAge) + time.Hour,
		FailedKeep:    cfg.WebhookFailedKeep,
		SweepInterval: cfg.SweepInterval,
		ReplayRate:    cfg.SubscriptionReplayRate,
	}
}
