package httpapi

import (
	"context"
	"net/http"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// health answers 200 when the database answers a ping within two seconds,
// 503 otherwise. It needs no credentials: load balancers call it.
func health(db *gorm.DB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Cache-Control", "no-store")
		if err := database.Ping(ctx, db); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "not answering"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}
