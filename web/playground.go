package web

import (
	"crypto/rand"
	"net/http"
)

// playgroundCSP lets the Playground load scripts, styles, fonts and images
// from this server only (GraphiQL's fonts and icons are inlined as data:
// URIs) and talk to this server only. Nothing inline runs or styles: the
// browser test checks that GraphiQL works with no violation reported.
const playgroundCSP = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Playground serves GET /playground: GraphiQL with ready examples. The page
// is open without credentials; its requests to /graphql need a token.
func Playground() http.Handler {
	return secureHeaders(playgroundCSP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store") // a new idempotency key on every load
		_ = playgroundPage("playground-"+rand.Text()).Render(r.Context(), w)
	}))
}

// PlaygroundAssets serves the Playground's scripts, styles and licences
// under /playground/assets/.
func PlaygroundAssets() http.Handler {
	return secureHeaders(playgroundCSP, http.StripPrefix(playgroundPrefix, staticFiles("playground")))
}

// secureHeaders sets the headers every page of ours carries.
func secureHeaders(csp string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
