package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/requestid"
)

// recoverPanics answers a panic that escaped a handler with a bare 500 and
// logs it with its stack; the server keeps running.
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p) // the server's own signal to drop the connection
					}
					log.ErrorContext(r.Context(), "panic in handler", "request_id", requestid.From(r.Context()),
						"panic", p, "stack", string(debug.Stack()))
					http.Error(w, "internal error; request id "+requestid.From(r.Context()), http.StatusInternalServerError)
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// accessLog writes one structured line per request, with the client
// address the sign-in limiter counts under, and, with metrics, records its
// latency: one wrapper and one clock for both. It never logs headers or
// bodies: they carry tokens and client data.
func accessLog(log *slog.Logger, m *metrics.Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			r = metrics.Begin(r)
			next.ServeHTTP(ww, r)
			took := time.Since(start)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			if m != nil {
				m.Observe(r, status, took)
			}
			logRequest(r.Context(), log, start.Add(took),
				slog.String("request_id", requestid.From(r.Context())),
				slog.String("client", clientaddr.From(r.Context())),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			)
		})
	}
}

// logRequest writes one access line. The record is made here rather than by
// log.LogAttrs, which records its caller's program counter for a source
// the access line never shows: unwinding the stack for it showed in the
// profile at thousands of requests a second. The attributes are typed for
// the same reason: boxing each value into an interface showed too.
func logRequest(ctx context.Context, log *slog.Logger, at time.Time, attrs ...slog.Attr) {
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	rec.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, rec)
}

// hstsMaxAge is a year: browsers that reached the server over HTTPS keep to
// HTTPS for that long (RFC 6797).
const hstsMaxAge = "max-age=31536000"

// hsts sends Strict-Transport-Security to clients that came over HTTPS
// (this server's TLS, or X-Forwarded-Proto from a trusted proxy: see
// clientaddr). Over plain HTTP browsers ignore it, so it is not sent.
func hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if clientaddr.IsHTTPS(r.Context()) {
			w.Header().Set("Strict-Transport-Security", hstsMaxAge)
		}
		next.ServeHTTP(w, r)
	})
}

// nosniff tells browsers to take every answer as the Content-Type it
// names (X-Content-Type-Options). API answers echo what clients sent (a
// client id, metadata, a query's text in an error); without it a browser
// sent to such a URL may guess HTML or script from those bytes. The admin
// and Playground pages set it too, with their other headers (web's
// secureHeaders); Set keeps it to one value.
func nosniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// DebugHandler serves Go's profiler (/debug/pprof/) and expvar
// (/debug/vars). It has no credentials of its own: serve it on DEBUG_ADDR,
// a loopback or private address, never on the public listener.
//
//	go tool pprof -http : http://127.0.0.1:6060/debug/pprof/profile
func DebugHandler() http.Handler {
	r := chi.NewRouter()
	r.Mount("/debug", middleware.Profiler())
	return r
}
