package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cmpay/cmpay/payments"
)

// processorMetrics are the processor calls' collectors.
type processorMetrics struct {
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	resolved  *prometheus.CounterVec
	leaseLate *prometheus.CounterVec
	dups      *prometheus.CounterVec
}

func newProcessorMetrics(reg *prometheus.Registry) *processorMetrics {
	m := &processorMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_processor_calls_total",
			Help: "Calls made by this instance to the payment processor, by operation (CREATE_PAYMENT, CAPTURE_PAYMENT, " +
				"CANCEL_PAYMENT, REFUND_PAYMENT; reads made to resolve one count under it) and outcome (SUCCEEDED, " +
				"DECLINED, UNKNOWN, ERROR).",
		}, []string{"operation", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cmpay_processor_call_duration_seconds",
			Help:    "How long the payment processor took to answer a call (or PROCESSOR_TIMEOUT), by operation.",
			Buckets: []float64{.0005, .001, .005, .025, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_processor_unknown_resolved_total",
			Help: "Processor operations whose outcome was unknown and that this instance settled by the processor's word, by operation.",
		}, []string{"operation"}),
		leaseLate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_processor_lease_late_total",
			Help: "Processor operations this instance's recovery left to a later claim without asking the processor, " +
				"setting the operation's lease having left less than half of PROCESSOR_TIMEOUT (a slow database), by operation.",
		}, []string{"operation"}),
		dups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_processor_duplicates_total",
			Help: "Second payments or refunds the processor holds for one CMPay operation (money moved twice), " +
				"or a refund it made that CMPay shows FAILED and could not count, " +
				"or a second Pix or boleto waiting for its payer (canceled there), " +
				"recorded by this instance the first time each was found, by operation (CREATE_PAYMENT, REFUND_PAYMENT).",
		}, []string{"operation"}),
	}
	// Shown at 0 from the start, so that an alert on their increase sees
	// the first one.
	for _, op := range payments.Operations {
		m.resolved.WithLabelValues(string(op))
		m.leaseLate.WithLabelValues(string(op))
	}
	for _, op := range []payments.Operation{payments.OpCreate, payments.OpRefund} {
		m.dups.WithLabelValues(string(op))
	}
	reg.MustRegister(m.calls, m.latency, m.resolved, m.leaseLate, m.dups)
	return m
}

// OnProcessorCall counts one processor call and its duration; it is the
// payments.Config hook.
func (m *Metrics) OnProcessorCall(op payments.Operation, outcome payments.CallOutcome, took time.Duration) {
	m.processor.calls.WithLabelValues(string(op), string(outcome)).Inc()
	m.processor.latency.WithLabelValues(string(op)).Observe(took.Seconds())
}

// OnOperationSettled counts a resolved unknown outcome; it is the
// payments.Config hook.
func (m *Metrics) OnOperationSettled(op payments.Operation, wasUnknown bool) {
	if wasUnknown {
		m.processor.resolved.WithLabelValues(string(op)).Inc()
	}
}

// OnLeaseLate counts an operation recovery left to a later claim because
// setting its lease left too little time; it is the payments.Config hook.
func (m *Metrics) OnLeaseLate(op payments.Operation) {
	m.processor.leaseLate.WithLabelValues(string(op)).Inc()
}

// OnDuplicate counts a duplicate the processor holds, recorded for the
// first time; it is the payments.Config hook.
func (m *Metrics) OnDuplicate(op payments.Operation) {
	m.processor.dups.WithLabelValues(string(op)).Inc()
}

// WatchUnknown exports the processor operations whose outcome is unknown
// and not yet resolved (count), across instances, as the gauge
// cmpay_processor_unknown_open, read from the database at each scrape.
func (m *Metrics) WatchUnknown(count func(context.Context) (int64, error)) {
	m.watchCount("cmpay_processor_unknown_open",
		"Processor operations whose outcome is unknown and not yet resolved, across all instances.", count)
}
