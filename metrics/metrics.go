// Package metrics exposes CMPay's Prometheus metrics: what became of every
// idempotent request and how long requests take by operation; the
// processor's calls, the outcomes left unknown and the operations
// recovery left for a lease set too late; the events written,
// webhook deliveries and GraphQL subscriptions; WebSockets waiting for
// connection_init or refused at it; and the database connection pool.
package metrics

import (
	"context"
	"database/sql"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cmpay/cmpay/payments"
)

// Metrics holds the collectors of one server.
type Metrics struct {
	registry *prometheus.Registry
	created  *prometheus.CounterVec
	replayed *prometheus.CounterVec
	rejected *prometheus.CounterVec
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	events   *eventMetrics
	// processor counts the processor calls (processor.go).
	processor *processorMetrics
	// sockets count the WebSockets waiting for connection_init (sockets.go).
	sockets *socketMetrics

	// The children of the vectors above, by their labels. Every request
	// counts its attempt and observes its latency: looking a child up in a
	// vector hashes and checks its label values under a lock, which showed
	// in the profile at thousands of requests a second. The label values
	// are few (operations, outcomes, transports, routes), so the maps stay
	// small.
	attemptChildren  sync.Map // attemptLabels → *attemptCounters
	durationChildren sync.Map // durationLabels → prometheus.Observer
}

// attemptLabels are the labels of one settled request.
type attemptLabels struct {
	op        payments.Operation
	outcome   payments.Outcome
	transport string
}

// attemptCounters are the counters one settled request adds one to; key
// and written are nil where the request counts in none.
type attemptCounters struct {
	requests prometheus.Counter
	key      prometheus.Counter // created, replayed or rejected
	written  prometheus.Counter // the event the request wrote
}

type durationLabels struct{ op, status string }

// New registers every collector, the database pool's among them.
func New(db *sql.DB) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_payments_created_total",
			Help: "Payments created, by the API they came through.",
		}, []string{"transport"}),
		replayed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_idempotency_keys_replayed_total",
			Help: "Requests of any operation that reused a key for the same request and got its first result back.",
		}, []string{"transport"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_idempotency_keys_rejected_total",
			Help: "Requests refused with IDEMPOTENCY_KEY_REUSED: a key reused for another operation or payload.",
		}, []string{"transport"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_requests_total",
			Help: "Requests that change payments, by operation (CREATE_PAYMENT, CAPTURE_PAYMENT, CANCEL_PAYMENT, " +
				"REFUND_PAYMENT), outcome (CREATED, APPLIED, REPLAYED, REJECTED, REFUSED) and transport.",
		}, []string{"operation", "outcome", "transport"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cmpay_request_duration_seconds",
			Help:    "HTTP request latency by operation (GraphQL root fields, REST endpoint or route).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"operation", "status"}),
	}
	m.registry.MustRegister(
		m.created, m.replayed, m.rejected, m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db, "cmpay"),
	)
	m.events = newEventMetrics(m.registry)
	m.processor = newProcessorMetrics(m.registry)
	m.sockets = newSocketMetrics(m.registry)
	return m
}

// OnAttempt counts one settled request; it is the payments.Config hook.
// Every operation's outcomes go to cmpay_requests_total; a key's replays
// and rejections, of any operation, also to the counters version 1 had.
func (m *Metrics) OnAttempt(op payments.Operation, outcome payments.Outcome, transport string) {
	labels := attemptLabels{op: op, outcome: outcome, transport: transport}
	c, ok := m.attemptChildren.Load(labels)
	if !ok {
		c, _ = m.attemptChildren.LoadOrStore(labels, m.newAttemptCounters(labels))
	}
	counters := c.(*attemptCounters)
	counters.requests.Inc()
	if counters.key != nil {
		counters.key.Inc()
	}
	if counters.written != nil {
		counters.written.Inc()
	}
}

// newAttemptCounters looks up the counters of one kind of settled request.
func (m *Metrics) newAttemptCounters(l attemptLabels) *attemptCounters {
	c := &attemptCounters{
		requests: m.requests.WithLabelValues(string(l.op), string(l.outcome), l.transport),
		written:  m.events.eventCounter(l.op, l.outcome),
	}
	switch l.outcome {
	case payments.OutcomeCreated:
		c.key = m.created.WithLabelValues(l.transport)
	case payments.OutcomeReplayed:
		c.key = m.replayed.WithLabelValues(l.transport)
	case payments.OutcomeRejected:
		c.key = m.rejected.WithLabelValues(l.transport)
	}
	return c
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

type operationKey struct{}

// Begin readies a request to be timed: handlers deeper down name its
// operation with SetOperation, and Observe reads the name back.
func Begin(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), operationKey{}, new(string)))
}

// SetOperation names the operation a request turned out to be, for the
// latency histogram; handlers deeper down call it (the GraphQL executor
// once it knows the root fields, the REST endpoint).
func SetOperation(ctx context.Context, name string) {
	if op, ok := ctx.Value(operationKey{}).(*string); ok {
		*op = name
	}
}

// Observe records a finished request, r being the one Begin returned,
// labelled with the operation SetOperation named or else the matched
// route. The access log calls it, so that a request is wrapped and timed
// once for both.
func (m *Metrics) Observe(r *http.Request, status int, took time.Duration) {
	name, _ := r.Context().Value(operationKey{}).(*string)
	op := ""
	if name != nil {
		op = *name
	}
	if op == "" {
		op = "route:" + routeOf(r)
	}
	labels := durationLabels{op: op, status: statusClass(status)}
	o, ok := m.durationChildren.Load(labels)
	if !ok {
		o, _ = m.durationChildren.LoadOrStore(labels, m.duration.WithLabelValues(labels.op, labels.status))
	}
	o.(prometheus.Observer).Observe(took.Seconds())
}

// routeOf is the route pattern that served r ("/admin/payments/{id}"), never
// the raw path, which would make a label per payment.
func routeOf(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

func statusClass(code int) string {
	return string(rune('0'+code/100)) + "xx"
}
