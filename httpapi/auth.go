package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/time/rate"

	"github.com/cmpay/cmpay/apierror"
)

// credentials checks the bearer tokens a request presents. Tokens are
// compared as SHA-256 digests in constant time, every candidate every time,
// so neither a token's length nor which one matched shows in the response
// time. Nothing here logs a secret. (Staff sign in with their own accounts:
// package staff, and staffBasic for /metrics.)
type credentials struct {
	tokens [][sha256.Size]byte
}

func newCredentials(tokens []string) *credentials {
	c := &credentials{}
	for _, t := range tokens {
		c.tokens = append(c.tokens, sha256.Sum256([]byte(t)))
	}
	return c
}

// bearer reports whether r carries "Authorization: Bearer <one of tokens>".
func (c *credentials) bearer(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	presented := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, t := range c.tokens {
		match |= subtle.ConstantTimeCompare(presented[:], t[:])
	}
	return match == 1
}

// failureLimiter keeps guessing slow: each client address may fail
// authentication `burst` times, regaining one try every minute/burst; once
// it has none left, its requests get 429 without their credentials even
// being checked. Successful requests cost nothing. Addresses are the TCP
// peer's: behind a proxy, that is the proxy's, so limit there too.
type failureLimiter struct {
	perMinute int
	byAddr    *expirable.LRU[string, *rate.Limiter]
}

// DefaultAuthFailuresPerMinute is how many failed sign-ins an address may
// make per minute, in a burst or spread out.
const DefaultAuthFailuresPerMinute = 20

func newFailureLimiter(perMinute int) *failureLimiter {
	if perMinute <= 0 {
		perMinute = DefaultAuthFailuresPerMinute
	}
	// Bounded memory: the 100,000 most recent addresses, each forgotten
	// once its bucket would be full again.
	return &failureLimiter{perMinute: perMinute, byAddr: expirable.NewLRU[string, *rate.Limiter](100_000, nil, time.Minute)}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether addr has no tries left, and when it will.
func (l *failureLimiter) blocked(addr string) (bool, time.Duration) {
	lim, ok := l.byAddr.Get(addr)
	if !ok {
		return false, 0
	}
	if lim.Tokens() >= 1 {
		return false, 0
	}
	return true, time.Minute / time.Duration(l.perMinute)
}

// failed spends one of addr's tries.
func (l *failureLimiter) failed(addr string) {
	lim, ok := l.byAddr.Get(addr)
	if !ok {
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(l.perMinute)), l.perMinute)
	}
	lim.Allow()
	l.byAddr.Add(addr, lim) // refreshes the entry's expiry
}

// style is how a kind of route answers errors.
type style int

const (
	styleGraphQL style = iota // {"errors": [{"message", "extensions": {"code"}}]}
	styleProblem              // application/problem+json
)

// guard lets a request through when allowed says so; otherwise it answers
// 401 (asking for the right scheme), or 429 once the address has failed
// too often.
func guard(allowed func(*http.Request) bool, limiter *failureLimiter, st style, challenge string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addr := clientAddr(r)
			if blocked, wait := limiter.blocked(addr); blocked {
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+1)))
				writeError(w, r, st, apierror.Error{Code: apierror.RateLimited, Status: http.StatusTooManyRequests,
					Message: "too many failed sign-ins from this address; wait and try again"})
				return
			}
			if !allowed(r) {
				limiter.failed(addr)
				w.Header().Set("WWW-Authenticate", challenge)
				writeError(w, r, st, apierror.Error{Code: apierror.Unauthenticated, Status: http.StatusUnauthorized,
					Message: unauthenticatedMessage(challenge)})
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
	writeJSON(w, e.Status, map[string]any{
		"errors": []map[string]any{{"message": e.Message, "extensions": map[string]any{"code": e.Code}}},
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
