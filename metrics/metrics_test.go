package metrics_test

import (
	"database/sql"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// TestEveryRequestCounts: the children of the vectors are looked up once
// and kept; every later request with the same labels still counts, and
// requests with other labels count apart.
func TestEveryRequestCounts(t *testing.T) {
	t.Parallel()
	m := metrics.New(new(sql.DB))
	for range 3 {
		m.OnAttempt(payments.OpCreate, payments.OutcomeCreated, "graphql")
	}
	for range 2 {
		m.OnAttempt(payments.OpCreate, payments.OutcomeReplayed, "rest")
	}
	m.OnAttempt(payments.OpCreate, payments.OutcomeRejected, "graphql")
	m.OnAttempt(payments.OpCapture, payments.OutcomeRefused, "graphql")
	for _, op := range []string{"createPayment", "createPayment", "payment"} {
		r := metrics.Begin(httptest.NewRequest("POST", "/graphql", nil))
		metrics.SetOperation(r.Context(), op)
		m.Observe(r, 200, time.Millisecond)
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cmpay_requests_total{operation="CREATE_PAYMENT",outcome="CREATED",transport="graphql"} 3`,
		`cmpay_requests_total{operation="CREATE_PAYMENT",outcome="REPLAYED",transport="rest"} 2`,
		`cmpay_requests_total{operation="CREATE_PAYMENT",outcome="REJECTED",transport="graphql"} 1`,
		`cmpay_requests_total{operation="CAPTURE_PAYMENT",outcome="REFUSED",transport="graphql"} 1`,
		`cmpay_payments_created_total{transport="graphql"} 3`,
		`cmpay_idempotency_keys_replayed_total{transport="rest"} 2`,
		`cmpay_idempotency_keys_rejected_total{transport="graphql"} 1`,
		`cmpay_events_written_total{type="PAYMENT_CREATED"} 3`,
		`cmpay_request_duration_seconds_count{operation="createPayment",status="2xx"} 2`,
		`cmpay_request_duration_seconds_count{operation="payment",status="2xx"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), `type="PAYMENT_CAPTURED"}`) {
		t.Error("a refused capture counted as an event")
	}
}
