package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// eventMetrics are the outbox's and the webhooks' collectors.
type eventMetrics struct {
	written    *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	attempt    *prometheus.HistogramVec
	latency    prometheus.Histogram
	refused    *prometheus.CounterVec
}

func newEventMetrics(reg *prometheus.Registry) *eventMetrics {
	m := &eventMetrics{
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_events_written_total",
			Help: "Payment events written to the outbox by this instance, by type (PAYMENT_CREATED, PAYMENT_CAPTURED, PAYMENT_CANCELED, PAYMENT_REFUNDED).",
		}, []string{"type"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_webhook_deliveries_total",
			Help: "Webhook delivery outcomes recorded by this instance: succeeded (a 2xx answer), retried (an attempt failed and will be retried), failed (retries ran out after WEBHOOK_MAX_AGE).",
		}, []string{"outcome"}),
		attempt: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cmpay_webhook_attempt_duration_seconds",
			Help:    "How long webhook endpoints took to answer an attempt, by result (2xx, or error for anything else).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cmpay_webhook_delivery_latency_seconds",
			Help:    "Time from an event to its successful delivery, retries included.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 15, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600},
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_subscriptions_refused_total",
			Help: "Subscriptions refused with TOO_MANY_SUBSCRIPTIONS, by the cap that refused them (socket, token, instance).",
		}, []string{"limit"}),
	}
	for _, o := range []string{"succeeded", "retried", "failed"} {
		m.deliveries.WithLabelValues(o)
	}
	for _, l := range []string{"socket", "token", "instance"} {
		m.refused.WithLabelValues(l)
	}
	reg.MustRegister(m.written, m.deliveries, m.attempt, m.latency, m.refused)
	return m
}

// eventTypes is the event each applied operation writes.
var eventTypes = map[payments.Operation]payments.EventType{
	payments.OpCreate: payments.EventCreated, payments.OpCapture: payments.EventCaptured,
	payments.OpCancel: payments.EventCanceled, payments.OpRefund: payments.EventRefunded,
}

// eventCounter is the counter of the event a settled request wrote, nil if
// it wrote none: a create or change that applied writes exactly one.
func (m *eventMetrics) eventCounter(op payments.Operation, outcome payments.Outcome) prometheus.Counter {
	if outcome != payments.OutcomeCreated && outcome != payments.OutcomeApplied {
		return nil
	}
	return m.written.WithLabelValues(string(eventTypes[op]))
}

// WebhookHooks are the webhooks dispatcher's hooks into these metrics.
func (m *Metrics) WebhookHooks() webhooks.Hooks {
	e := m.events
	return webhooks.Hooks{
		Attempted: func(took time.Duration, ok bool) {
			result := "error"
			if ok {
				result = "2xx"
			}
			e.attempt.WithLabelValues(result).Observe(took.Seconds())
		},
		Delivered: func(lag time.Duration) {
			e.deliveries.WithLabelValues("succeeded").Inc()
			e.latency.Observe(lag.Seconds())
		},
		Retried: func() { e.deliveries.WithLabelValues("retried").Inc() },
		Failed:  func() { e.deliveries.WithLabelValues("failed").Inc() },
	}
}

// WatchSubscriptions exports how many subscriptions follow live events on
// this instance (count), as the gauge cmpay_event_subscriptions.
func (m *Metrics) WatchSubscriptions(count func() int) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cmpay_event_subscriptions",
		Help: "Subscriptions (WebSocket or SSE) following live payment events on this instance.",
	}, func() float64 { return float64(count()) }))
}

// WatchReplays exports how many subscriptions read back from the outbox
// on this instance (count: those holding a replay slot, those waiting for
// one), as the gauge cmpay_event_replays{state="reading|waiting"}.
func (m *Metrics) WatchReplays(count func() (reading, waiting int)) {
	for _, state := range []string{"reading", "waiting"} {
		m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "cmpay_event_replays",
			Help:        "Subscriptions reading back from the outbox on this instance (a replay from after, a catch-up), by state: reading holds one of the replay slots, waiting waits for its client's share of them or a free one.",
			ConstLabels: prometheus.Labels{"state": state},
		}, func() float64 {
			reading, waiting := count()
			if state == "reading" {
				return float64(reading)
			}
			return float64(waiting)
		}))
	}
}

// SubscriptionRefused counts a subscription refused by a cap (limit:
// socket, token or instance) in cmpay_subscriptions_refused_total.
func (m *Metrics) SubscriptionRefused(limit string) {
	m.events.refused.WithLabelValues(limit).Inc()
}

// WatchBacklog exports the outbox backlog, the webhook deliveries neither
// delivered nor given up (count), as the gauge cmpay_webhook_backlog, read
// from the database at each scrape.
func (m *Metrics) WatchBacklog(count func(context.Context) (int64, error)) {
	m.watchCount("cmpay_webhook_backlog", "Webhook deliveries not yet delivered nor given up, across all instances.", count)
}

// watchCount exports count, read from the database at each scrape (within
// 2 s; -1 when it fails), as the gauge name.
func (m *Metrics) watchCount(name, help string, count func(context.Context) (int64, error)) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := count(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
}
