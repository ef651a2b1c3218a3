package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/cmpay/cmpay/graph"
)

// bearerAuth lets a request through only with "Authorization: Bearer <t>"
// for one of tokens. Tokens are compared as SHA-256 digests in constant
// time, every one of them, so neither a token's length nor which token
// matched shows in the response time.
func bearerAuth(tokens []string) func(http.Handler) http.Handler {
	digests := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		digests[i] = sha256.Sum256([]byte(t))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !validBearer(r.Header.Get("Authorization"), digests) {
				writeUnauthenticated(w)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func validBearer(header string, digests [][sha256.Size]byte) bool {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	presented := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for _, d := range digests {
		match |= subtle.ConstantTimeCompare(presented[:], d[:])
	}
	return match == 1
}

// writeUnauthenticated answers as a GraphQL server would: HTTP 401 with a
// GraphQL error whose code is UNAUTHENTICATED.
func writeUnauthenticated(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cmpay"`)
	writeJSON(w, http.StatusUnauthorized, map[string]any{
		"errors": []map[string]any{{
			"message":    "missing or invalid bearer token: send Authorization: Bearer <token>",
			"extensions": map[string]any{"code": graph.CodeUnauthenticated},
		}},
	})
}
