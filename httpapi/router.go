// Package httpapi assembles CMPay's HTTP surface: the GraphQL API and the
// REST endpoint behind bearer tokens, the Playground, metrics, the health
// check, and the middleware every request goes through (request ids, panic
// recovery, access log, latency metrics, CORS, body limits).
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/cors"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
	"github.com/cmpay/cmpay/web"
	"github.com/cmpay/cmpay/webhooks"
)

// Deps is what the HTTP surface is built from.
type Deps struct {
	Service *payments.Service
	// DB is pinged by /healthz.
	DB      *gorm.DB
	Metrics *metrics.Metrics

	// APITokens are the bearer tokens the API accepts.
	APITokens     []string
	AdminUser     string
	AdminPassword string

	// CORSOrigins may call the API from a browser; none when empty.
	CORSOrigins []string
	// MaxBodyBytes caps request bodies; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// GraphQL holds the GraphQL limits; nil means graph.DefaultOptions.
	GraphQL *graph.Options
	// AuthFailuresPerMinute is how often one address may fail to sign in;
	// zero means DefaultAuthFailuresPerMinute.
	AuthFailuresPerMinute int

	// Events serves subscriptions and Webhooks the webhook endpoints and
	// the admin's Webhooks page; either may be nil.
	Events   *events.Service
	Webhooks *webhooks.Service

	Logger *slog.Logger
}

// NewHandler returns the whole HTTP surface. Routes are listed in one place,
// here; every one of them except /healthz and the Playground needs
// credentials.
func NewHandler(d Deps) http.Handler {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = DefaultMaxBodyBytes
	}
	gqlOpts := graph.DefaultOptions()
	if d.GraphQL != nil {
		gqlOpts = *d.GraphQL
	}
	gqlOpts.OnOperation = metrics.SetOperation
	creds := newCredentials(d.APITokens, d.AdminUser, d.AdminPassword)
	failures := newFailureLimiter(d.AuthFailuresPerMinute)
	gqlOpts.Events, gqlOpts.Webhooks = d.Events, d.Webhooks
	gqlOpts.Authenticate = websocketAuthenticator(creds, failures)
	apiToken := guard(creds.bearer, failures, styleGraphQL, bearerChallenge)
	restToken := guard(creds.bearer, failures, styleProblem, bearerChallenge)
	adminOnly := guard(creds.admin, failures, styleProblem, basicChallenge)
	adminOrToken := guard(func(r *http.Request) bool { return creds.admin(r) || creds.bearer(r) }, failures, styleProblem, basicChallenge)

	r := chi.NewRouter()
	r.Use(requestid.Middleware, recoverPanics(log), accessLog(log, d.Metrics))
	if len(d.CORSOrigins) > 0 {
		r.Use(cors.New(cors.Options{
			AllowedOrigins: d.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Idempotency-Key"},
			ExposedHeaders: []string{requestid.Header, "Idempotent-Replayed", "Location"},
			MaxAge:         600,
		}).Handler)
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, apierror.Error{Code: apierror.NotFound, Status: http.StatusNotFound, Message: "no such path"})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, apierror.Error{Code: apierror.BadRequest, Status: http.StatusMethodNotAllowed,
			Message: r.Method + " is not allowed on " + r.URL.Path})
	})

	// Open: load balancers and the Playground page itself.
	r.Get("/healthz", health(d.DB))
	r.Method(http.MethodGet, "/playground", web.Playground())
	r.Method(http.MethodGet, "/playground/assets/*", web.PlaygroundAssets())

	// The APIs: bearer token.
	body := limitBody(d.MaxBodyBytes)
	r.With(body, websocketOrToken(apiToken, failures)).Handle("/graphql", graph.NewHandler(d.Service, gqlOpts))
	r.With(body, restToken).Post("/api/payments", createPaymentREST(d.Service))
	r.With(body, restToken).Post("/api/payments/{id}/capture", capturePaymentREST(d.Service))
	r.With(body, restToken).Post("/api/payments/{id}/cancel", cancelPaymentREST(d.Service))
	r.With(body, restToken).Post("/api/payments/{id}/refunds", refundPaymentREST(d.Service))
	r.With(restToken).Get("/api/payments/{id}", getPaymentREST(d.Service))
	r.With(restToken).Get("/api/payments/{id}/refunds/{refundId}", getRefundREST(d.Service))

	// Support staff: the admin's HTTP Basic credentials.
	adminUI := adminOnly(web.Admin(d.Service, web.WithWebhooks(d.Webhooks)))
	r.Handle("/admin", adminUI)
	r.Handle("/admin/*", adminUI)

	// Operators: admin credentials or a token.
	if d.Metrics != nil {
		r.With(adminOrToken).Method(http.MethodGet, "/metrics", d.Metrics.Handler())
	}
	// Go's profiler, for the admin only: go tool pprof -http : http://admin:…@host/debug/pprof/profile
	r.With(adminOnly).Mount("/debug", middleware.Profiler())
	return r
}
