package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/requestid"
)

// credentials checks the bearer tokens a request presents: one of
// API_TOKENS, or a managed token (package apitoken). Secrets held in memory
// are compared as SHA-256 digests in constant time, every candidate every
// time, so neither a secret's length nor which one matched shows in the
// response time. Nothing here logs a secret. (Staff sign in with their own
// accounts: package staff; staffBasic checks an admin account on /metrics.)
type credentials struct {
	tokens [][sha256.Size]byte
	// envPrincipal is the principal of API_TOKENS, made once.
	envPrincipal auth.Principal
	// managed looks up managed tokens; nil: API_TOKENS only.
	managed *apitoken.Store
}

func newCredentials(tokens []string, managed *apitoken.Store) *credentials {
	c := &credentials{
		envPrincipal: auth.FullAccess(auth.KindEnvToken, "API_TOKENS"),
		managed:      managed,
	}
	for _, t := range tokens {
		c.tokens = append(c.tokens, sha256.Sum256([]byte(t)))
	}
	return c
}

// signIn is what a request's credentials came to.
type signIn struct {
	ok        bool
	principal auth.Principal
	// identity is whom the request claimed to be, for the failure limiter.
	identity string
}

// identityPrefix is how many characters of a presented token name its
// identity for the failure limiter: enough to tell one targeted token from
// random guesses, far too few to be worth anything to a thief.
const identityPrefix = 12

// bearer checks "Authorization: Bearer <token>": API_TOKENS first (full
// access), then the managed tokens.
func (c *credentials) bearer(r *http.Request) (signIn, error) {
	return c.bearerValue(r.Context(), r.Header.Get("Authorization"), 0)
}

// bearerValue checks an Authorization value as bearer checks the header.
// A long-lived connection that checks its value again every margin
// believes a cached managed token only if it stays cached that much
// longer (apitoken.Store.Recheck).
func (c *credentials) bearerValue(ctx context.Context, authorization string, margin time.Duration) (signIn, error) {
	scheme, token, found := strings.Cut(authorization, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return signIn{}, nil
	}
	token = strings.TrimSpace(token)
	presented := sha256.Sum256([]byte(token))
	match := 0
	for _, t := range c.tokens {
		match |= subtle.ConstantTimeCompare(presented[:], t[:])
	}
	if match == 1 {
		return signIn{ok: true, principal: c.envPrincipal}, nil
	}
	if c.managed != nil {
		ctx, cancel := context.WithTimeout(ctx, credentialCheckTimeout)
		defer cancel()
		p, ok, err := c.managed.Recheck(ctx, token, margin)
		if ok || err != nil {
			return signIn{ok: ok, principal: p}, err
		}
	}
	return signIn{identity: "bearer:" + prefix(token, identityPrefix)}, nil
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// check is one way of signing in.
type check func(r *http.Request) (signIn, error)

// either accepts what a or b accepts; a failure is counted under the
// identity the request claimed, whichever scheme it used.
func either(a, b check) check {
	return func(r *http.Request) (signIn, error) {
		resA, err := a(r)
		if err != nil || resA.ok {
			return resA, err
		}
		resB, err := b(r)
		if err != nil || resB.ok || resB.identity != "" {
			return resB, err
		}
		return resA, nil
	}
}

// credentialCheckTimeout bounds a credential check that asks the database
// (a managed token not in the cache, a staff account's password), over
// HTTP or in a WebSocket's connection_init: while the database does not
// answer, the request fails with SERVICE_UNAVAILABLE instead of waiting
// for it.
const credentialCheckTimeout = 5 * time.Second

// style is how a kind of route answers errors.
type style int

const (
	styleGraphQL style = iota // {"errors": [{"message", "extensions": {"code"}}]}
	styleProblem              // application/problem+json
)

// guard lets a request with good credentials through, acting for their
// principal (see auth.FromContext), always: failures
// from the same address (a NAT, a proxy, an attacker next door) never lock
// out a client that signs in correctly. A request without good ones gets
// 401 (asking for the right scheme), or 429 once its address or the
// identity it claimed has failed too often (see auth.FailureLimiter). Each
// failed sign-in, and the failure that spends a budget, is logged with the
// client address, never with what was presented.
func guard(ok check, limiter *auth.FailureLimiter, st style, challenge string, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Several Authorization headers never get here (oneAuthorization).
			headers := r.Header.Values("Authorization")
			result, err := ok(r)
			if err != nil {
				refuseBody(w, r)
				writeError(w, r, st, apierror.FromDomain(r.Context(), err))
				return
			}
			if result.ok {
				next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), result.principal)))
				return
			}
			identity := result.identity
			refuseBody(w, r)
			// No credentials at all is not a guess: a browser's first
			// request before it asks for a password, or a forgotten header.
			if len(headers) == 1 {
				if blocked := signInFailed(log, limiter, r, identity, "wrong credentials"); blocked.Any() {
					w.Header().Set("Retry-After", strconv.Itoa(int(blocked.RetryAfter.Seconds()+1)))
					writeError(w, r, st, apierror.Error{Code: apierror.RateLimited, Status: http.StatusTooManyRequests,
						Message: "too many failed sign-ins; wait and try again"})
					return
				}
			}
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, r, st, apierror.Error{Code: apierror.Unauthenticated, Status: http.StatusUnauthorized,
				Message: unauthenticatedMessage(challenge)})
		})
	}
}

// oneAuthorization refuses, on every route (open ones, the admin UI and
// the processor's events included, whichever credentials they take), a
// request with more than one Authorization header. Which one would count?
// Proxies and frameworks disagree (the first, the last, both joined), so
// none does, and no route is left for a proxy in front to read otherwise.
func oneAuthorization(limiter *auth.FailureLimiter, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := styleProblem
			if r.URL.Path == "/graphql" {
				st = styleGraphQL
			}
			if refuseSeveralAuthorizations(w, r, st, limiter, log) {
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuseSeveralAuthorizations answers a request with more than one
// Authorization header, and says whether it did.
func refuseSeveralAuthorizations(w http.ResponseWriter, r *http.Request, st style, limiter *auth.FailureLimiter, log *slog.Logger) bool {
	if len(r.Header.Values("Authorization")) <= 1 {
		return false
	}
	refuseBody(w, r)
	signInFailed(log, limiter, r, "", "several Authorization headers")
	writeError(w, r, st, apierror.Error{Code: apierror.BadRequest, Status: http.StatusBadRequest,
		Message: "send one Authorization header, not several"})
	return true
}

// refuseBody makes sure a refused request's body is never read: net/http
// would otherwise read up to 256 KB of it before sending the answer, to keep
// the connection for another request, and wait as long as a stranger likes
// to send it. The connection closes after the answer instead.
func refuseBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// signInFailed counts a failed sign-in, logs it (and the lockout it may
// cause), and returns what was blocked before it: a failure made while a
// budget was already spent gets 429.
func signInFailed(log *slog.Logger, limiter *auth.FailureLimiter, r *http.Request, identity, reason string) auth.Blocked {
	ctx := r.Context()
	attempt := auth.Attempt{Addr: clientaddr.From(ctx), Identity: identity}
	before := limiter.Blocked(attempt)
	now := limiter.Failed(attempt)
	log.LogAttrs(ctx, slog.LevelWarn, "sign-in failed",
		slog.String("request_id", requestid.From(ctx)),
		slog.String("client", attempt.Addr),
		slog.String("scheme", schemeOf(r)),
		slog.String("path", r.URL.Path),
		slog.String("reason", reason),
		slog.Bool("limited", before.Any()),
	)
	if now.Any() {
		var spent []string
		if now.Addr {
			spent = append(spent, "address")
		}
		if now.Identity {
			spent = append(spent, "identity")
		}
		log.LogAttrs(ctx, slog.LevelWarn, "sign-in lockout",
			slog.String("request_id", requestid.From(ctx)),
			slog.String("client", attempt.Addr),
			slog.String("spent", strings.Join(spent, "+")),
			slog.Float64("retry_after_s", now.RetryAfter.Seconds()),
		)
	}
	return before
}

// schemeOf names the Authorization scheme for the log from a fixed list: a
// header without a scheme would otherwise put its secret in the log.
func schemeOf(r *http.Request) string {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	switch strings.ToLower(scheme) {
	case "bearer":
		return "bearer"
	case "basic":
		return "basic"
	}
	return "other"
}

// requireScope refuses, with 403 FORBIDDEN, a request whose principal
// lacks scope. It runs after guard and before the body is read.
func requireScope(scope auth.Scope, st style) func(http.Handler) http.Handler {
	return requireOneOf([]auth.Scope{scope}, st)
}

// requireOneOf is requireScope for a route that any one of scopes opens
// (auth.CreatingPayments, auth.ReadingAPayment).
func requireOneOf(scopes []auth.Scope, st style) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := auth.Require(r.Context(), scopes...); err != nil {
				refuseBody(w, r)
				writeError(w, r, st, apierror.FromDomain(r.Context(), err))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

const (
	bearerChallenge = `Bearer realm="cmpay"`
	basicChallenge  = `Basic realm="CMPay admin", charset="UTF-8"`
)

func unauthenticatedMessage(challenge string) string {
	if strings.HasPrefix(challenge, "Basic") {
		return "send an API token, or the username and password of an admin staff account"
	}
	return "missing or invalid bearer token: send Authorization: Bearer <token>"
}

// writeError answers in the route's style.
func writeError(w http.ResponseWriter, r *http.Request, st style, e apierror.Error) {
	if st == styleProblem {
		writeProblem(w, r, e)
		return
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	writeJSON(w, e.Status, map[string]any{
		"errors": []map[string]any{{"message": e.Message, "extensions": map[string]any{"code": e.Code}}},
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
