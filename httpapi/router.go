// Package httpapi assembles CMPay's HTTP surface: the GraphQL API behind
// bearer tokens, the health check, and the middleware every request goes
// through (request ids, panic recovery, access log).
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
)

// Deps is what the HTTP surface is built from.
type Deps struct {
	Service *payments.Service
	// DB is pinged by /healthz.
	DB *gorm.DB
	// APITokens are the bearer tokens the API accepts.
	APITokens []string
	Logger    *slog.Logger
}

// NewHandler returns the whole HTTP surface.
func NewHandler(d Deps) http.Handler {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	r := chi.NewRouter()
	r.Use(requestid.Middleware, recoverPanics(log), accessLog(log))

	r.Get("/healthz", health(d.DB))

	api := bearerAuth(d.APITokens)
	r.With(api).Handle("/graphql", graph.NewHandler(d.Service))
	return r
}
