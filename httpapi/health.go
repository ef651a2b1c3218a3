package httpapi

import (
	"context"
	"net/http"
	"time"
)

// health answers 200 when ping (the database's) succeeds within two
// seconds, 503 with Retry-After otherwise. It needs no credentials: load
// balancers call it. A nil ping means nothing to check: always 503, so a
// handler built without one never passes for healthy.
func health(ping func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Cache-Control", "no-store")
		if ping == nil || ping(ctx) != nil {
			w.Header().Set("Retry-After", retryAfterSeconds)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "not answering"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}
