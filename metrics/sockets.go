package metrics

import "github.com/prometheus/client_golang/prometheus"

// socketMetrics count the WebSockets that have not sent connection_init:
// how many wait now, and how many were refused at the upgrade by a cap.
type socketMetrics struct {
	waiting prometheus.Gauge
	refused *prometheus.CounterVec
}

func newSocketMetrics(reg *prometheus.Registry) *socketMetrics {
	m := &socketMetrics{
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cmpay_websockets_waiting_for_init",
			Help: "WebSockets opened without an Authorization header that have not sent connection_init yet, on this instance.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_websockets_refused_total",
			Help: "WebSocket upgrades refused because too many sockets were waiting for connection_init, by the cap that refused them (address: 429, instance: 503).",
		}, []string{"limit"}),
	}
	for _, l := range []string{"address", "instance"} {
		m.refused.WithLabelValues(l)
	}
	reg.MustRegister(m.waiting, m.refused)
	return m
}

// WebSocketWaiting adds delta to cmpay_websockets_waiting_for_init: +1 when
// a socket without credentials is let in, -1 when its connection_init
// comes or it ends.
func (m *Metrics) WebSocketWaiting(delta int) {
	m.sockets.waiting.Add(float64(delta))
}

// WebSocketRefused counts an upgrade refused by a cap on waiting sockets
// (limit: address or instance) in cmpay_websockets_refused_total.
func (m *Metrics) WebSocketRefused(limit string) {
	m.sockets.refused.WithLabelValues(limit).Inc()
}
