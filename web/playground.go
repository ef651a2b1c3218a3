package web

import (
	"crypto/rand"
	"net/http"
)

// playgroundCSP lets the Playground load scripts, styles, fonts, images and
// web workers from this server only and talk to this server only. No inline
// or eval'd script ever runs: script-src is 'self' alone, so injected markup
// cannot run code. Two directives differ from the admin pages' policy:
//
//   - style-src 'unsafe-inline': GraphiQL 5's editor, Monaco, styles itself
//     at run time. It renders every line and widget as HTML strings with
//     style="top:…;height:…" attributes (hundreds per page; no nonce or hash
//     can allow attributes whose values change as you type), and writes its
//     theme (token colours, the --vscode-* variables its widgets use) into
//     a <style> element it creates; react-remove-scroll adds one too when a
//     dialog opens. Monaco 0.52 has no nonce option for that element. With
//     'self' alone the editors' lines overlap and lose their colours. What
//     injected CSS could do is bounded by the rest of this policy: url()s
//     reach this server or data: only (img-src, font-src), so it cannot
//     send anything elsewhere.
//   - worker-src 'self': Monaco runs its language services (GraphQL, JSON,
//     the editor's own) in web workers, bundled as files under
//     /playground/assets/. script-src 'self' would allow them already (the
//     fallback); it is spelled out so workers stay same-origin files (no
//     blob: or data: workers) whatever happens to script-src.
//
// connect-src 'self' covers fetch to /graphql and, in CSP Level 3 browsers,
// the ws:/wss: WebSocket to the same host that GraphiQL opens for
// subscriptions. GraphiQL's fonts are data: URIs; Monaco's icon font is a
// file of ours. The browser tests check that the Playground works with no
// violation reported.
const playgroundCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self'; " +
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
