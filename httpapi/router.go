// Package httpapi assembles CMPay's HTTP surface: the GraphQL API (with
// subscriptions over WebSocket and SSE) and the REST endpoints behind
// bearer tokens, the processor's signed events, the staff admin, the
// Playground and OpenAPI document, metrics, the health check, and the
// middleware every request goes through (request ids, client addresses,
// security headers, panic recovery, access log, latency metrics, CORS,
// body limits).
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/cors"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/web"
	"github.com/cmpay/cmpay/webhooks"
)

// Deps is what the HTTP surface is built from.
type Deps struct {
	Service *payments.Service
	// Ping checks that the database answers; /healthz calls it
	// (database.Pinger in the server).
	Ping    func(context.Context) error
	Metrics *metrics.Metrics

	// APITokens are the bearer tokens the API accepts with full access.
	APITokens []string
	// Tokens holds the managed tokens (scoped, perhaps bound to a
	// client); nil accepts APITokens only.
	Tokens *apitoken.Store
	// Staff holds the staff accounts and sessions of the admin UI; an admin
	// account's username and password (HTTP Basic) also read /metrics.
	Staff *staff.Store
	// AdminRequestTimeout bounds each admin request's work with the
	// database; zero means web.DefaultAdminRequestTimeout.
	AdminRequestTimeout time.Duration

	// CORSOrigins may call the API from a browser; none when empty.
	CORSOrigins []string
	// MaxBodyBytes caps request bodies; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// GraphQL holds the GraphQL limits; nil means graph.DefaultOptions.
	GraphQL *graph.Options
	// AuthFailuresPerMinute is how often one address, or one identity, may
	// fail to sign in; zero means auth.DefaultFailuresPerMinute.
	AuthFailuresPerMinute int
	// PendingSockets caps the WebSockets that have not sent
	// connection_init yet; zero fields mean the defaults.
	PendingSockets PendingSocketLimits
	// TrustedProxies are the networks whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (see package clientaddr).
	TrustedProxies []netip.Prefix

	// Events serves subscriptions and Webhooks the webhook endpoints and
	// the admin's Webhooks page; either may be nil.
	Events   *events.Service
	Webhooks *webhooks.Service
	// ProcessorEvents takes in the events Stripe posts; nil (no
	// STRIPE_WEBHOOK_SECRET) leaves their route answering 404.
	ProcessorEvents *intake.Service
	// Sandbox says the sandbox is the processor: POST
	// /sandbox/payments/{id}/pay pays a pending Pix or boleto as its payer
	// would (404 otherwise).
	Sandbox bool

	Logger *slog.Logger
}

// NewHandler returns the whole HTTP surface. Routes are listed in one place,
// here; every one of them except /healthz and the Playground needs
// credentials (the processor's events carry a signature instead).
func NewHandler(d Deps) http.Handler {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = DefaultMaxBodyBytes
	}
	creds := newCredentials(d.APITokens, d.Tokens)
	failures := auth.NewFailureLimiter(d.AuthFailuresPerMinute)
	apiToken := guard(creds.bearer, failures, styleGraphQL, bearerChallenge, log)
	restToken := guard(creds.bearer, failures, styleProblem, bearerChallenge, log)
	adminOrToken := guard(either(staffBasic(d.Staff, failures), creds.bearer), failures, styleProblem, basicChallenge, log)
	gqlOpts := graphQLOptions(d, creds, failures)

	r := chi.NewRouter()
	r.Use(requestid.Middleware, clientaddr.New(d.TrustedProxies).Middleware, hsts, nosniff, recoverPanics(log), accessLog(log, d.Metrics))
	// HEAD on a GET route is answered as GET, without the body (RFC 9110
	// requires servers to support it where GET is): monitors and caches
	// check URLs with it. /graphql and /admin take every method already.
	r.Use(middleware.GetHead)
	if len(d.CORSOrigins) > 0 {
		r.Use(cors.New(cors.Options{
			AllowedOrigins: d.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost},
			AllowedHeaders: []string{"Authorization", "Content-Type", "Idempotency-Key"},
			ExposedHeaders: []string{requestid.Header, "Idempotent-Replayed", "Location", "Retry-After"},
			MaxAge:         600,
		}).Handler)
	}
	r.Use(oneAuthorization(failures, log))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, apierror.Error{Code: apierror.NotFound, Status: http.StatusNotFound, Message: "no such path"})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", allowedMethods(r, req))
		writeProblem(w, req, apierror.Error{Code: apierror.BadRequest, Status: http.StatusMethodNotAllowed,
			Message: req.Method + " is not allowed on " + req.URL.Path})
	})

	// Open: load balancers and the Playground page itself.
	r.Get("/healthz", health(d.Ping))
	r.Method(http.MethodGet, "/playground", web.Playground())
	r.Method(http.MethodGet, "/playground/assets/*", web.PlaygroundAssets())
	r.Get("/api/openapi.json", openAPI)
	r.Method(http.MethodGet, "/favicon.ico", web.Favicon())

	// The APIs: bearer token. Credentials are checked before the body is
	// read: a stranger's body, however slow or long, costs nothing.
	body := limitBody(d.MaxBodyBytes)
	// GraphQL checks scopes per root field (graph's rootFieldScopes).
	pending := newPendingSockets(d.PendingSockets, socketHooks(d.Metrics))
	r.With(websocketOrToken(apiToken, pending), body).Handle("/graphql", graph.NewHandler(d.Service, gqlOpts))
	r.With(restToken, requireOneOf(auth.CreatingPayments, styleProblem), body).Post("/api/payments", createPaymentREST(d.Service))
	r.With(restToken, requireScope(auth.PaymentsWrite, styleProblem), body).Post("/api/payments/{id}/capture", capturePaymentREST(d.Service))
	r.With(restToken, requireScope(auth.PaymentsWrite, styleProblem), body).Post("/api/payments/{id}/cancel", cancelPaymentREST(d.Service))
	r.With(restToken, requireScope(auth.PaymentsWrite, styleProblem), body).Post("/api/payments/{id}/refunds", refundPaymentREST(d.Service))
	r.With(restToken, requireOneOf(auth.ReadingAPayment, styleProblem)).Get("/api/payments/{id}", getPaymentREST(d.Service))
	if d.Sandbox {
		r.With(restToken, requireScope(auth.PaymentsWrite, styleProblem)).Post("/sandbox/payments/{id}/pay", paySandboxREST(d.Service))
	}
	r.With(restToken, requireScope(auth.PaymentsRead, styleProblem)).Get("/api/payments/{id}/refunds/{refundId}", getRefundREST(d.Service))

	// The processor's events: signed with the webhook secret, which is
	// their credential.
	if d.ProcessorEvents != nil {
		r.With(body).Post("/processor/stripe/events", processorEvents(d.ProcessorEvents))
	}

	// Support staff: their own accounts, signed in with a session cookie
	// (web.Admin checks the session and the role of every route).
	adminUI := adminHandler(d, failures, log)
	r.Handle("/admin", adminUI)
	r.Handle("/admin/*", adminUI)

	// Operators: a token, or an admin staff account's HTTP Basic.
	if d.Metrics != nil {
		r.With(adminOrToken, requireScope(auth.MetricsRead, styleProblem)).Method(http.MethodGet, "/metrics", d.Metrics.Handler())
	}
	// Go's profiler and expvar are not here: see DebugHandler (DEBUG_ADDR).
	return r
}

// graphQLOptions are d's GraphQL limits (graph.DefaultOptions when none)
// joined to what the handler needs from the rest of the surface: the
// credentials a WebSocket's connection_init is checked against, the
// metrics, and the events and webhooks services.
func graphQLOptions(d Deps, creds *credentials, failures *auth.FailureLimiter) graph.Options {
	o := graph.DefaultOptions()
	if d.GraphQL != nil {
		o = *d.GraphQL
	}
	o.OnOperation = metrics.SetOperation
	o.Events, o.Webhooks = d.Events, d.Webhooks
	o.Authenticate = websocketAuthenticator(creds, failures)
	o.Recheck = connectionRecheck(creds)
	if d.Metrics != nil {
		o.OnSubscriptionRefused, o.OnWebSocketRefused = d.Metrics.SubscriptionRefused, d.Metrics.WebSocketRefused
		o.OnStreamCut = d.Metrics.StreamCut
	}
	o.ClientOf = auth.BoundClient
	return o
}

// socketHooks count the sockets waiting for connection_init in m, if any.
func socketHooks(m *metrics.Metrics) pendingSocketHooks {
	if m == nil {
		return pendingSocketHooks{}
	}
	return pendingSocketHooks{waiting: m.WebSocketWaiting, dropped: m.WebSocketDropped}
}

// adminHandler is the admin UI over d's services; sign-in failures count
// in failures, as the API's do.
func adminHandler(d Deps, failures *auth.FailureLimiter, log *slog.Logger) http.Handler {
	return web.Admin(web.AdminDeps{
		Payments:        d.Service,
		Staff:           d.Staff,
		Limiter:         adminSignInLimiter{failures},
		ClientAddr:      func(r *http.Request) string { return clientaddr.From(r.Context()) },
		HTTPS:           func(r *http.Request) bool { return clientaddr.IsHTTPS(r.Context()) },
		Webhooks:        d.Webhooks,
		Tokens:          d.Tokens,
		ProcessorEvents: d.ProcessorEvents,
		Logger:          log,
		RequestTimeout:  d.AdminRequestTimeout,
	})
}

// routeMethods are the methods allowedMethods asks the routes about.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods is the Allow header of a 405 for req's path: the methods
// routes has a route for there, which RFC 9110 requires a 405 to name, and
// HEAD wherever GET is (middleware.GetHead answers it). chi matches the
// escaped path when the request has one, as it routes.
func allowedMethods(routes chi.Routes, req *http.Request) string {
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	var allowed []string
	for _, m := range routeMethods {
		if routes.Match(chi.NewRouteContext(), m, path) ||
			m == http.MethodHead && slices.Contains(allowed, http.MethodGet) {
			allowed = append(allowed, m)
		}
	}
	return strings.Join(allowed, ", ")
}
