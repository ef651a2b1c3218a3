package graph

import (
	"context"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// Options tunes the GraphQL handler. The zero value is not useful; start
// from DefaultOptions.
type Options struct {
	// Introspection allows __schema and __type queries.
	Introspection bool
	// MaxDepth is how deeply selections may nest.
	MaxDepth int
	// MaxComplexity caps an operation's cost: one per field, lists
	// multiplied by their size.
	MaxComplexity int
	// MaxQueryBytes and MaxTokens cap a document before it is parsed;
	// zero means DefaultMaxQueryBytes and DefaultMaxTokens.
	MaxQueryBytes int
	MaxTokens     int
	// OnOperation, if set, is told the operation's name for metrics: its
	// root fields, such as "createPayment".
	OnOperation func(ctx context.Context, name string)

	// Events serves Subscription.paymentEvents and Webhooks the webhook
	// endpoints; nil answers that they are not available.
	Events   *events.Service
	Webhooks *webhooks.Service
	// Authenticate checks the credentials a WebSocket client presents in
	// connection_init's payload (the Authorization value, "Bearer <token>")
	// and returns the context the connection's operations run in; an error
	// wrapping ErrRefused closes the socket with 4403, another (the check
	// could not be made) with 1013, try again later. The HTTP layer passes
	// it in, since it owns credentials; nil refuses every WebSocket
	// connection.
	Authenticate func(ctx context.Context, authorization string) (context.Context, error)
	// Recheck checks again the Authorization value a WebSocket or an SSE
	// stream opened with, through the same (cached) path as an HTTP
	// request's: before each operation a WebSocket carries (margin 0), and
	// every RecheckEvery while either is open (margin RecheckEvery: a
	// cached answer is believed only if it would still be believed at the
	// next check). It returns an error wrapping ErrRefused when the
	// credentials are no longer accepted (a WebSocket then closes with
	// 4403, an SSE subscription ends with UNAUTHENTICATED), another error
	// when they could not be checked. Nil refuses every WebSocket
	// operation.
	Recheck func(ctx context.Context, authorization string, margin time.Duration) error
	// RecheckEvery: zero means DefaultRecheckEvery.
	RecheckEvery time.Duration
	// InitTimeout is how long a WebSocket may take to send
	// connection_init; zero means DefaultInitTimeout.
	InitTimeout time.Duration
	// StreamWriteTimeout is how long a WebSocket or an SSE stream may take
	// to accept one write (an event, a ping); zero or less means
	// DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// OnStreamCut, if set, is told the transport ("websocket", "sse") of
	// each stream cut because its client took no write for
	// StreamWriteTimeout: once per stream.
	OnStreamCut func(transport string)
	// Subscriptions caps the open subscriptions, and its PerToken and
	// PerInstance the open WebSockets; OnSubscriptionRefused, if set, is
	// told the cap (socket, token, instance) of each subscription refused,
	// OnWebSocketRefused the cap (token, instance) of each WebSocket
	// closed with 1013.
	Subscriptions         SubscriptionLimits
	OnSubscriptionRefused func(limit string)
	OnWebSocketRefused    func(limit string)
	// ClientOf returns the client the request's credentials are bound to,
	// "" for none: such a request sees and creates that client's events and
	// webhook endpoints only. Nil means no request is bound.
	ClientOf func(ctx context.Context) string
}

// DefaultMaxComplexity is the cost an operation may have by default: a
// page of 100 payments with every field of Payment, its lists included,
// costs 5,931 (TestAPageOfEveryPaymentFieldFits); two such pages, 50
// aliases of payment(id:) each asking attempts(first: 100), or 450
// aliases of a payments listing do not fit.
const DefaultMaxComplexity = 6000

// DefaultOptions are the limits the server starts with.
func DefaultOptions() Options {
	return Options{Introspection: true, MaxDepth: 10, MaxComplexity: DefaultMaxComplexity,
		MaxQueryBytes: DefaultMaxQueryBytes, MaxTokens: DefaultMaxTokens}
}

func init() {
	// An operation over the complexity limit is refused before it runs, like
	// one that fails validation, and answered with a 4xx status.
	errcode.RegisterErrorType(codeTooComplex, errcode.KindProtocol)
	errcode.RegisterErrorType(apierror.BadRequest, errcode.KindProtocol)
}

// validationRules are the spec's rules with the overlap check bounded, and
// this server's own limits.
func validationRules(opts Options) *rules.Rules {
	r := rules.NewDefaultRules()
	overlap := boundedOverlapRule(overlapBudget)
	r.ReplaceRule(overlap.Name, overlap.RuleFunc)
	r.AddRule(keepDecimalLiterals.Name, keepDecimalLiterals.RuleFunc)
	r.AddRule(int32Literals.Name, int32Literals.RuleFunc)
	depthRule := maxDepthRule(opts.MaxDepth)
	r.AddRule(depthRule.Name, depthRule.RuleFunc)
	fieldsRule := maxFieldsRule(maxFields)
	r.AddRule(fieldsRule.Name, fieldsRule.RuleFunc)
	if !opts.Introspection {
		r.AddRule(noIntrospectionRule.Name, noIntrospectionRule.RuleFunc)
	}
	return r
}

// NewHandler serves the GraphQL API over svc per GraphQL over HTTP: queries
// by GET or POST, mutations by POST only, application/json and
// application/graphql-response+json.
func NewHandler(svc *payments.Service, opts Options) http.Handler {
	subscriptions := newSubscriptionCounter(opts.Subscriptions, opts.OnSubscriptionRefused, opts.OnWebSocketRefused)
	schema := NewExecutableSchema(Config{
		Resolvers: &Resolver{Service: svc, Events: opts.Events, Webhooks: opts.Webhooks, ClientOf: opts.ClientOf,
			subscriptions: subscriptions},
		Complexity: complexity(),
	})
	recheck := rechecker{check: opts.Recheck, every: opts.RecheckEvery}
	if recheck.every <= 0 {
		recheck.every = DefaultRecheckEvery
	}
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	srv := handler.New(schema)
	srv.AddTransport(newWebsocketTransport(opts, recheck, subscriptions)) // first: an upgrade is a GET too
	srv.AddTransport(transport.Options{})
	srv.AddTransport(getTransport{})
	srv.AddTransport(sseTransport{SSE: transport.SSE{KeepAlivePingInterval: 15 * time.Second}, recheck: recheck,
		writeTimeout: opts.StreamWriteTimeout, onCut: opts.OnStreamCut}) // before POST, which takes any JSON POST
	srv.AddTransport(postTransport{})
	srv.AddTransport(unsupportedTransport{})

	if opts.MaxQueryBytes <= 0 {
		opts.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	srv.SetParserTokenLimit(opts.MaxTokens)
	srv.SetValidationRulesFn(func() *rules.Rules { return validationRules(opts) })
	// Parsed and validated documents are reused across requests.
	docs := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(docs)
	// First: a query too long is refused before anything, the persisted
	// query cache included, keeps it.
	srv.Use(requestLimits{maxBytes: opts.MaxQueryBytes})
	if opts.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](1000)})
	srv.Use(requireQuery{}) // after APQ, which fills in persisted queries
	srv.Use(sentVariables{})
	// Before gqlgen parses and validates it: a document whose validation
	// would hold a core is refused without starting it.
	srv.Use(documentCost{cache: docs, maxTokens: opts.MaxTokens})
	srv.Use(scopeCheck{scopes: rootFieldScopes}) // first of what runs once the document is valid
	srv.Use(strictVariables{schema: schema.Schema()})
	srv.Use(extension.FixedComplexityLimit(opts.MaxComplexity))
	srv.AroundOperations(aroundOperations(recheck, opts))
	srv.AroundResponses(aroundResponses)
	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	return withLoaders(svc, srv)
}

// aroundOperations is what runs around every operation, outermost first:
// the credentials of a WebSocket checked again, a subscription refused
// without a stream, the list budget, a subscription's ending and its own
// event loaders, and the operation named for metrics. A query or mutation
// not over a WebSocket, nearly every request, needs only the list budget
// and the name (the other steps pass it on unchanged), and gets them
// without the chain's closures and the context lookups each step makes to
// tell what it is. A step added to the chain runs for such an operation
// only if it is added to that path too.
func aroundOperations(recheck rechecker, opts Options) graphql.OperationMiddleware {
	chain := []graphql.OperationMiddleware{recheck.aroundOperations, streamsOnly,
		withListBudget(opts.MaxComplexity), withEnding, withEventLoaders}
	if opts.OnOperation != nil {
		chain = append(chain, func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			// A WebSocket carries many operations, run concurrently, for one
			// HTTP request: they are not that request's operation.
			if !overWebsocket(ctx) {
				opts.OnOperation(ctx, operationName(graphql.GetOperationContext(ctx)))
			}
			return next(ctx)
		})
	}
	slow := chainOperations(chain)
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		rc := graphql.GetOperationContext(ctx)
		if overWebsocket(ctx) || rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
			return slow(ctx, next)
		}
		if opts.OnOperation != nil {
			opts.OnOperation(ctx, operationName(rc))
		}
		if opts.MaxComplexity > 0 && rc.Operation != nil { // withListBudget's
			ctx = withBudget(ctx, opts.MaxComplexity, rc.Operation.Operation)
		}
		return next(ctx)
	}
}

// chainOperations runs ms as gqlgen runs middlewares added one by one
// with AroundOperations: the first outermost.
func chainOperations(ms []graphql.OperationMiddleware) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		h := next
		for i := len(ms) - 1; i >= 0; i-- {
			m, inner := ms[i], h
			h = func(ctx context.Context) graphql.ResponseHandler { return m(ctx, inner) }
		}
		return h(ctx)
	}
}

// aroundResponses is what runs around every response, in the order of
// capErrors (innermost), endWithError and streamEnd (outermost), in one
// step.
func aroundResponses(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return streamEnd(ctx, endWithError(ctx, capErrors(next(ctx))))
}
