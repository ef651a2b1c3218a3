package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cmpay/cmpay/apierror"
)

// credentials checks what a request presents. Secrets are compared as
// SHA-256 digests in constant time, every candidate every time, so neither
// a secret's length nor which one matched shows in the response time.
type credentials struct {
	tokens    [][sha256.Size]byte
	adminUser [sha256.Size]byte
	adminPass [sha256.Size]byte
}

func newCredentials(tokens []string, adminUser, adminPassword string) *credentials {
	c := &credentials{
		adminUser: sha256.Sum256([]byte(adminUser)),
		adminPass: sha256.Sum256([]byte(adminPassword)),
	}
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

// admin reports whether r carries the admin's HTTP Basic credentials.
func (c *credentials) admin(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return false
	}
	u := sha256.Sum256([]byte(user))
	p := sha256.Sum256([]byte(pass))
	return subtle.ConstantTimeCompare(u[:], c.adminUser[:])&subtle.ConstantTimeCompare(p[:], c.adminPass[:]) == 1
}

// require lets a request through when allowed says so, and otherwise
// answers with deny.
func require(allowed func(*http.Request) bool, deny http.HandlerFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !allowed(r) {
				deny(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

const unauthenticatedMessage = "missing or invalid bearer token: send Authorization: Bearer <token>"

// denyGraphQL answers as a GraphQL server: 401 with a GraphQL error whose
// code is UNAUTHENTICATED.
func denyGraphQL(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cmpay"`)
	writeJSON(w, http.StatusUnauthorized, map[string]any{
		"errors": []map[string]any{{
			"message":    unauthenticatedMessage,
			"extensions": map[string]any{"code": apierror.Unauthenticated},
		}},
	})
}

// denyREST answers with a 401 problem.
func denyREST(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cmpay"`)
	writeProblem(w, r, apierror.Error{Code: apierror.Unauthenticated, Status: http.StatusUnauthorized, Message: unauthenticatedMessage})
}

// denyAdmin asks the browser for the admin's password.
func denyAdmin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="CMPay admin", charset="UTF-8"`)
	writeProblem(w, r, apierror.Error{Code: apierror.Unauthenticated, Status: http.StatusUnauthorized,
		Message: "sign in with the admin user and password"})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
