package web

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// AdminDeps is what the admin UI is built from.
type AdminDeps struct {
	Payments *payments.Service
	Staff    *staff.Store
	// Limiter counts failed sign-ins (and failed password checks) per
	// client; nil means no limit.
	Limiter SignInLimiter
	// ClientAddr is the address a request comes from, as recorded in the
	// audit log and on payment attempts; nil means the TCP peer's host.
	ClientAddr func(*http.Request) string
	// HTTPS reports whether the browser reached us over HTTPS, which makes
	// the session cookie Secure; nil means r.TLS != nil.
	HTTPS func(*http.Request) bool
	// Webhooks serves the Webhooks page; nil when events are not running.
	Webhooks *webhooks.Service
	// Tokens serves the API tokens page; nil without managed tokens.
	Tokens *apitoken.Store
	// ProcessorEvents lists the events the processor sent about a
	// payment, on its page; nil when none are taken in.
	ProcessorEvents *intake.Service
	// Logger receives what goes wrong; nil means slog.Default.
	Logger *slog.Logger
	// RequestTimeout bounds each admin request's work with the database
	// (ADMIN_REQUEST_TIMEOUT); zero means DefaultAdminRequestTimeout.
	RequestTimeout time.Duration
}

// SignInLimiter keeps password guessing slow. Take is asked before a
// password is checked: it takes a try of the address's budget for that
// username, or refuses (nil) when the budget is spent (spent true) or the
// address has too many checks under way; a refused try is answered 429
// without the password being checked, and counted with Refused (first:
// the first since the budget was spent). Failures from other addresses
// never spend an address's budget, so a staff member signing in from
// their own address is never locked out by a guesser elsewhere.
// AnonymousSpent and AnonymousFailed are the address's budget of failures
// with usernames that are no account's, past which those are no longer
// audited one by one.
type SignInLimiter interface {
	Take(addr, username string) (try SignInTry, spent bool, wait time.Duration)
	Refused(addr, username string) (first bool, count int)
	AnonymousSpent(addr string) bool
	AnonymousFailed(addr string)
}

// SignInTry is a password check Take let through; exactly one of its
// methods ends it.
type SignInTry interface {
	// Succeeded: the password was right; the try is given back.
	Succeeded()
	// Failed: wrong credentials; the try stays spent.
	Failed() (nowBlocked bool)
	// Abandoned: not checked (an error); the try is given back.
	Abandoned()
}

type noLimit struct{}

func (noLimit) Take(string, string) (SignInTry, bool, time.Duration) { return noTry{}, false, 0 }
func (noLimit) Refused(string, string) (bool, int)                   { return false, 0 }
func (noLimit) AnonymousSpent(string) bool                           { return false }
func (noLimit) AnonymousFailed(string)                               {}

type noTry struct{}

func (noTry) Succeeded()   {}
func (noTry) Failed() bool { return false }
func (noTry) Abandoned()   {}

// sessionCookie is the one cookie the admin sets: the session token.
const sessionCookie = "cmpay_admin"

// Paths a request may reach without a session.
const (
	loginPath   = "/admin/login"
	logoutPath  = "/admin/logout"
	accountPath = "/admin/account"
	staticPath  = "/admin/static/"
)

type sessionKey struct{}

// sessionFrom is the signed-in staff member's session, set for every page
// behind the sign-in.
func sessionFrom(ctx context.Context) (staff.Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(staff.Session)
	return s, ok
}

// route is one admin route: what it needs and what it is called in the
// audit log when someone without the role tries it.
type route struct {
	need   staff.Role
	action staff.Action
}

// handle registers a route behind the sign-in that needs at least role
// need. A request beyond the staff member's role, GET or POST, gets 403,
// runs nothing, and is audited as a denied action.
func (a *admin) handle(mux *http.ServeMux, pattern string, rt route, h http.HandlerFunc) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		sess, ok := sessionFrom(r.Context())
		if !ok {
			// withSession lets nothing through without one; this is a bug.
			serverError(w, r, errors.New("admin route reached without a session"))
			return
		}
		if !sess.Account.Role.Allows(rt.need) {
			target := r.URL.Path
			if id := r.PathValue("id"); id != "" {
				target = id
			}
			detail := r.Method + " " + r.URL.Path + ": role " + string(sess.Account.Role) + ", needs " + string(rt.need)
			if err := a.staff.Record(r.Context(), sess.Actor(a.addr(r)), rt.action, target, staff.OutcomeDenied, detail); err != nil {
				serverError(w, r, err)
				return
			}
			render(w, r, http.StatusForbidden, forbiddenPage("Your role ("+string(sess.Account.Role)+") does not allow this: it needs "+string(rt.need)+"."))
			return
		}
		h(w, r)
	})
}

// isOpen reports whether path is reachable without a session: the sign-in
// page and the stylesheet it uses (which holds no data).
func isOpen(path string) bool {
	return path == loginPath || strings.HasPrefix(path, staticPath)
}

// withSession puts the session of the request's cookie in its context, or
// sends the browser to the sign-in page (303), coming back here after. A
// session whose password is temporary reaches only the account page (to
// change it) and sign-out.
func (a *admin) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOpen(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		sess, err := a.session(r)
		if errors.Is(err, staff.ErrNoSession) {
			a.clearCookie(w, r)
			http.Redirect(w, r, signInFor(r), http.StatusSeeOther)
			return
		}
		if err != nil {
			serverError(w, r, err)
			return
		}
		if sess.Account.MustChangePassword && r.URL.Path != accountPath && r.URL.Path != logoutPath {
			http.Redirect(w, r, accountPath, http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

// signInFor is where a request without a session is sent: the sign-in,
// coming back to the page asked for, or, for a form sent after the session
// ended, to the page the form was on, with word that it was not sent
// (unsent=1): nothing was done, and the staff member must know it.
func signInFor(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet && r.URL.Path != "/admin":
		return loginPath + "?next=" + url.QueryEscape(r.URL.RequestURI())
	case r.Method != http.MethodPost || r.URL.Path == logoutPath:
		return loginPath
	}
	page := formPage(r.URL.Path)
	if page == "" {
		return loginPath + "?unsent=1"
	}
	return loginPath + "?unsent=1&next=" + url.QueryEscape(page)
}

// formPage is the page whose form posts to urlPath: a payment's page for
// its actions, the staff, tokens and webhooks pages for theirs; "" for the
// others.
func formPage(urlPath string) string {
	if rest, ok := strings.CutPrefix(urlPath, "/admin/payments/"); ok {
		if id, _, ok := strings.Cut(rest, "/"); ok && id != "" {
			return "/admin/payments/" + url.PathEscape(id)
		}
		return ""
	}
	for _, page := range []string{"/admin/staff", "/admin/tokens", "/admin/webhooks", accountPath} {
		if urlPath == page || strings.HasPrefix(urlPath, page+"/") {
			return page
		}
	}
	return ""
}

// session is the live session the request's cookie names.
func (a *admin) session(r *http.Request) (staff.Session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return staff.Session{}, staff.ErrNoSession
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionLookupTimeout)
	defer cancel()
	return a.staff.Session(ctx, c.Value)
}

// sessionLookupTimeout bounds reading a session, which every admin request
// does, the CSV export's too: a database that stops answering without
// closing the connection would otherwise hold the request for as long as
// the kernel keeps the connection (minutes). A lookup takes a millisecond.
const sessionLookupTimeout = 5 * time.Second

// setCookie hands the browser its session token: HttpOnly (no script ever
// reads it; the admin runs none anyway), SameSite=Lax (not sent with
// another site's POST), Secure over HTTPS, and only for /admin. It has no
// expiry of its own: it goes when the browser closes, and the server ends
// the session after the idle timeout or 12 hours, whichever comes first.
func (a *admin) setCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/admin",
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.https(r)})
}

func (a *admin) clearCookie(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(sessionCookie); err != nil {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/admin", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.https(r)})
}

// crossSite refuses, with 403, every state-changing request that a browser
// says comes from another origin (Sec-Fetch-Site, else Origin against
// Host): a form on another site cannot make a signed-in browser refund,
// sign out or add staff. This stands on top of the SameSite cookie, which
// same-site origins (another port, a sibling subdomain) would still get.
// Requests without either header (not from a browser) pass.
func (a *admin) crossSite(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.log.LogAttrs(r.Context(), slog.LevelWarn, "cross-site request refused",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("origin", r.Header.Get("Origin")), slog.String("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")))
		if err := a.auditCrossSite(r); err != nil {
			serverError(w, r, err)
			return
		}
		render(w, r, http.StatusForbidden, forbiddenPage("This request came from another site, so it was refused and nothing was done."))
	}))
	return cop.Handler(next)
}

// auditCrossSite records a refused cross-site request in the audit log when
// it carried a live session: a staff member's browser was made to send it
// (a forged form), which whoever reads the log must be able to see. Without
// a session it is only logged.
func (a *admin) auditCrossSite(r *http.Request) error {
	sess, err := a.session(r)
	if err != nil {
		return nil // no session (or none readable): nothing to attribute
	}
	action := staff.Action(r.Method + " " + r.URL.Path)
	for _, rt := range a.routes() {
		if method, pattern, _ := strings.Cut(rt.Pattern, " "); method == r.Method && routeMatches(pattern, r.URL.Path) {
			action = rt.Action
			break
		}
	}
	detail := "refused as cross-site, nothing was done (Sec-Fetch-Site " + cmp.Or(r.Header.Get("Sec-Fetch-Site"), "none") +
		", Origin " + clipped(visible(cmp.Or(r.Header.Get("Origin"), "none"))) + ")"
	// The target as the route's own audit entries name it: a payment's id.
	target := r.URL.Path
	if rest, ok := strings.CutPrefix(target, "/admin/payments/"); ok {
		target, _, _ = strings.Cut(rest, "/")
	}
	return a.staff.Record(r.Context(), sess.Actor(a.addr(r)), action, clipped(visible(target)), staff.OutcomeDenied, visible(detail))
}

// routeMatches says whether urlPath fits a route's pattern, whose {name}
// segments match any one segment.
func routeMatches(pattern, urlPath string) bool {
	want, got := strings.Split(pattern, "/"), strings.Split(urlPath, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		if w != got[i] && !(strings.HasPrefix(w, "{") && got[i] != "") {
			return false
		}
	}
	return true
}

// addr is the client address recorded for a request.
func (a *admin) addr(r *http.Request) string {
	if a.clientAddr != nil {
		return a.clientAddr(r)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (a *admin) https(r *http.Request) bool {
	if a.isHTTPS != nil {
		return a.isHTTPS(r)
	}
	return r.TLS != nil
}

// maxNext caps next: a page's address, not a place to carry data.
const maxNext = 2048

// safeNext is where a sign-in goes on to: a path on this site (the
// contract: "same-site paths only"), never another site ("//evil.example",
// "https://…", "/\evil", "/%2Fevil.example", which decodes to
// "//evil.example"), nor the sign-in and sign-out themselves. Anything else
// goes to /admin.
func safeNext(next string) string {
	const home = "/admin"
	if len(next) > maxNext || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return home
	}
	// The decoded path must be clean: no "//" (what a browser reads as
	// another host once RequestURI re-escapes it), no backslash, no dot
	// segments. A trailing slash is kept.
	clean := path.Clean(u.Path)
	if clean != strings.TrimSuffix(u.Path, "/") && clean != u.Path || strings.Contains(u.Path, "\\") ||
		clean == loginPath || clean == logoutPath {
		return home
	}
	// And what is sent is judged again, as the browser will read it.
	out := u.RequestURI()
	if sent, err := url.Parse(out); err != nil || sent.Host != "" || !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return home
	}
	return out
}
