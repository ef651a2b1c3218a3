package metrics

import "github.com/prometheus/client_golang/prometheus"

// socketMetrics count the WebSockets that have not sent connection_init:
// how many wait now, and how many were dropped to make room for newer
// ones.
type socketMetrics struct {
	waiting prometheus.Gauge
	dropped *prometheus.CounterVec
}

func newSocketMetrics(reg *prometheus.Registry) *socketMetrics {
	m := &socketMetrics{
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cmpay_websockets_waiting_for_init",
			Help: "WebSockets opened without an Authorization header that have not sent connection_init yet, on this instance.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_websockets_dropped_total",
			Help: "WebSockets dropped before their connection_init to make room for a newer one, by the cap that was full (address, instance).",
		}, []string{"limit"}),
	}
	for _, l := range []string{"address", "instance"} {
		m.dropped.WithLabelValues(l)
	}
	reg.MustRegister(m.waiting, m.dropped)
	return m
}

// WebSocketWaiting adds delta to cmpay_websockets_waiting_for_init: +1 when
// a socket without credentials is let in, -1 when its connection_init
// comes, it ends, or it is dropped to make room (WebSocketDropped).
func (m *Metrics) WebSocketWaiting(delta int) {
	m.sockets.waiting.Add(float64(delta))
}

// WebSocketDropped counts a waiting socket dropped because a cap (limit:
// address or instance) was full, in cmpay_websockets_dropped_total.
func (m *Metrics) WebSocketDropped(limit string) {
	m.sockets.dropped.WithLabelValues(limit).Inc()
}
