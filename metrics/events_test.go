package metrics_test

import (
	"context"
	"database/sql"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// TestEventMetrics: events written, delivery outcomes, latencies, the
// backlog, the live and replaying subscriptions and the subscriptions and WebSockets
// refused by a cap are exported.
func TestEventMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New(new(sql.DB))
	m.OnAttempt(payments.OpCreate, payments.OutcomeCreated, "graphql")
	m.OnAttempt(payments.OpRefund, payments.OutcomeApplied, "rest")
	m.OnAttempt(payments.OpRefund, payments.OutcomeReplayed, "rest")
	m.OnAttempt(payments.OpCapture, payments.OutcomeRefused, "rest")
	h := m.WebhookHooks()
	h.Attempted(20*time.Millisecond, true)
	h.Delivered(300 * time.Millisecond)
	h.Attempted(time.Second, false)
	h.Retried()
	h.Failed()
	m.WatchBacklog(func(context.Context) (int64, error) { return 7, nil })
	m.WatchSubscriptions(func() int { return 3 })
	m.WatchReplays(func() (int, int) { return 2, 5 })
	m.SubscriptionRefused("token")
	m.SubscriptionRefused("token")
	m.WebSocketRefused("instance")

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cmpay_events_written_total{type="PAYMENT_CREATED"} 1`,
		`cmpay_events_written_total{type="PAYMENT_REFUNDED"} 1`,
		`cmpay_webhook_deliveries_total{outcome="succeeded"} 1`,
		`cmpay_webhook_deliveries_total{outcome="retried"} 1`,
		`cmpay_webhook_deliveries_total{outcome="failed"} 1`,
		`cmpay_webhook_attempt_duration_seconds_count{result="2xx"} 1`,
		`cmpay_webhook_attempt_duration_seconds_count{result="error"} 1`,
		`cmpay_webhook_delivery_latency_seconds_count 1`,
		`cmpay_webhook_backlog 7`,
		`cmpay_event_subscriptions 3`,
		`cmpay_event_replays{state="reading"} 2`,
		`cmpay_event_replays{state="waiting"} 5`,
		`cmpay_subscriptions_refused_total{limit="token"} 2`,
		`cmpay_subscriptions_refused_total{limit="socket"} 0`,
		`cmpay_websockets_refused_total{limit="instance"} 1`,
		`cmpay_websockets_refused_total{limit="token"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), `type="PAYMENT_CAPTURED"} 1`) {
		t.Error("a refused capture counted as an event")
	}
}
