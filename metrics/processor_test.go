package metrics_test

import (
	"database/sql"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// TestLeaseLateCounts: every operation recovery left to a later claim for
// a lease set too late counts, by operation; the others show 0 from the
// start, so that an alert on the counter's increase sees the first one.
func TestLeaseLateCounts(t *testing.T) {
	t.Parallel()
	m := metrics.New(new(sql.DB))
	m.OnLeaseLate(payments.OpCapture)
	m.OnLeaseLate(payments.OpCapture)
	m.OnLeaseLate(payments.OpRefund)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cmpay_processor_lease_late_total{operation="CAPTURE_PAYMENT"} 2`,
		`cmpay_processor_lease_late_total{operation="REFUND_PAYMENT"} 1`,
		`cmpay_processor_lease_late_total{operation="CREATE_PAYMENT"} 0`,
		`cmpay_processor_lease_late_total{operation="CANCEL_PAYMENT"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestDuplicatesCount: each duplicate the processor holds, recorded for the
// first time, counts by operation; a create's and a refund's show 0 from
// the start.
func TestDuplicatesCount(t *testing.T) {
	t.Parallel()
	m := metrics.New(new(sql.DB))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); !strings.Contains(string(body), `cmpay_processor_duplicates_total{operation="REFUND_PAYMENT"} 0`+"\n") {
		t.Error("the refunds' duplicates are not shown at 0 from the start")
	}
	m.OnDuplicate(payments.OpCreate)
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`cmpay_processor_duplicates_total{operation="CREATE_PAYMENT"} 1`,
		`cmpay_processor_duplicates_total{operation="REFUND_PAYMENT"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}
