package metrics

import "github.com/prometheus/client_golang/prometheus"

// socketMetrics count the WebSockets that have not sent connection_init
// (how many wait now, and how many were dropped to make room for newer
// ones), those refused at connection_init by a cap on open sockets, and
// the streams cut because their client stopped reading.
type socketMetrics struct {
	waiting prometheus.Gauge
	dropped *prometheus.CounterVec
	refused *prometheus.CounterVec
	cut     *prometheus.CounterVec
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
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_websockets_refused_total",
			Help: "WebSockets closed with 1013 at connection_init because their token's or the instance's cap on open WebSockets was full, by that cap (token, instance).",
		}, []string{"limit"}),
		cut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cmpay_streams_cut_total",
			Help: "Subscription streams closed because their client took none of a write for the stream write timeout (30 s): a client that stopped reading, by transport (websocket, sse).",
		}, []string{"transport"}),
	}
	for _, l := range []string{"address", "instance"} {
		m.dropped.WithLabelValues(l)
	}
	for _, l := range []string{"token", "instance"} {
		m.refused.WithLabelValues(l)
	}
	for _, t := range []string{"websocket", "sse"} {
		m.cut.WithLabelValues(t)
	}
	reg.MustRegister(m.waiting, m.dropped, m.refused, m.cut)
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

// WebSocketRefused counts a socket closed with 1013 at connection_init
// because a cap on open WebSockets (limit: token or instance) was full, in
// cmpay_websockets_refused_total.
func (m *Metrics) WebSocketRefused(limit string) {
	m.sockets.refused.WithLabelValues(limit).Inc()
}

// StreamCut counts a subscription stream (transport: websocket or sse)
// closed because its client took no write for the stream write timeout,
// in cmpay_streams_cut_total.
func (m *Metrics) StreamCut(transport string) {
	m.sockets.cut.WithLabelValues(transport).Inc()
}
