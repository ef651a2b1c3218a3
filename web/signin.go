package web

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cmpay/cmpay/staff"
)

// loginView is the sign-in form as shown.
type loginView struct {
	Username string
	Next     string
	Error    string
	// Unsent says a form was sent after the session ended: not done.
	Unsent bool
}

// accountView is the account page.
type accountView struct {
	Account staff.Account
	Error   string
	Changed bool
}

// loginForm shows the sign-in form, or sends a signed-in browser on.
func (a *admin) loginForm(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if _, err := a.session(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	render(w, r, http.StatusOK, loginPage(loginView{Next: next, Unsent: r.URL.Query().Get("unsent") == "1"}))
}

// login signs in: 303 to next with a new session cookie; wrong credentials
// get the form again with one message for every reason (unknown user,
// wrong password, disabled account). Once this address has used up its
// failures for this username, 429 without the password being checked: a
// guesser learns nothing more until the budget refills, while the same
// staff member signing in from another address is never blocked by it
// (SignInLimiter). Every checked attempt is audited (staff.SignIn); of
// the refused ones, the first of each lockout.
func (a *admin) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		render(w, r, http.StatusBadRequest, loginPage(loginView{Next: "/admin", Error: "The form could not be read; try again."}))
		return
	}
	username, password := r.PostFormValue("username"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	addr, typed := a.addr(r), staff.NormalizeUsername(username)
	view := loginView{Username: username, Next: next}
	try, spent, wait := a.limiter.Take(addr, typed)
	if try == nil {
		a.refuseSignIn(w, r, view, addr, typed, spent, wait)
		return
	}
	token, acct, err := a.staff.SignIn(r.Context(), staff.SignInRequest{Username: username, Password: password,
		Address: addr, QuietUnknown: a.limiter.AnonymousSpent(addr)})
	if errors.Is(err, staff.ErrBadCredentials) {
		try.Failed()
		if errors.Is(err, staff.ErrUnknownUsername) {
			a.limiter.AnonymousFailed(addr)
		}
		view.Error = "Wrong username or password."
		render(w, r, http.StatusUnauthorized, loginPage(view))
		return
	}
	if err != nil {
		try.Abandoned()
		if errors.Is(err, staff.ErrBusy) {
			w.Header().Set("Retry-After", "1")
			view.Error = "The server is busy checking other sign-ins. Try again in a moment."
			render(w, r, http.StatusServiceUnavailable, loginPage(view))
			return
		}
		serverError(w, r, err)
		return
	}
	try.Succeeded()
	// A new token at every sign-in: a session id planted before it
	// (fixation) is worth nothing after. The old session, if any, ends.
	if old, err := a.session(r); err == nil {
		_ = a.staff.SignOut(r.Context(), old, addr)
	}
	a.setCookie(w, r, token)
	if acct.MustChangePassword {
		next = accountPath
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// refuseSignIn answers a sign-in the limiter refused before its password
// was checked: 429 with Retry-After. The first refusal of a lockout is
// audited; the others are counted in it, not recorded one by one, so that
// a guesser cannot fill the audit log.
func (a *admin) refuseSignIn(w http.ResponseWriter, r *http.Request, view loginView, addr, typed string, spent bool, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
	view.Error = "Too many sign-ins at once from this address. Wait a moment and try again."
	if spent {
		view.Error = "Too many failed sign-ins from this address. Wait a minute and try again."
		if first, _ := a.limiter.Refused(addr, typed); first {
			err := a.staff.RecordRefusedSignIn(r.Context(), typed, addr,
				"too many failed sign-ins to this username from this address: refused (429) without checking the password; "+
					"further refusals until the budget refills are counted in the log, not audited one by one")
			if err != nil {
				a.log.Warn("audit a refused sign-in", "err", err)
			}
		}
		a.log.Info("sign-in refused", "client", addr, "reason", "failures spent")
	}
	render(w, r, http.StatusTooManyRequests, loginPage(view))
}

// logout ends the session (server-side: the cookie is worth nothing after,
// wherever a copy of it is) and goes back to the sign-in form.
func (a *admin) logout(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	if err := a.staff.SignOut(r.Context(), sess, a.addr(r)); err != nil {
		serverError(w, r, err)
		return
	}
	a.clearCookie(w, r)
	http.Redirect(w, r, loginPath, http.StatusSeeOther)
}

// account shows the signed-in staff member's password form; with a
// temporary password, it is the only page they reach until they change it.
func (a *admin) account(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	render(w, r, http.StatusOK, accountPage(accountView{Account: sess.Account, Changed: r.URL.Query().Get("changed") == "1"}))
}

// changePassword changes the signed-in staff member's own password, after
// checking the current one (a wrong one counts as a failed sign-in), and
// ends their other sessions.
func (a *admin) changePassword(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, _ := sessionFrom(ctx)
	view := accountView{Account: sess.Account}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		view.Error = "The form could not be read; try again."
		render(w, r, http.StatusBadRequest, accountPage(view))
		return
	}
	current, next := r.PostFormValue("current_password"), r.PostFormValue("new_password")
	if next != r.PostFormValue("confirm_password") {
		view.Error = "The new password and its confirmation differ."
		render(w, r, http.StatusBadRequest, accountPage(view))
		return
	}
	addr := a.addr(r)
	try, _, wait := a.limiter.Take(addr, sess.Account.Username)
	if try == nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		view.Error = "Too many failed attempts from this address. Wait a minute and try again."
		render(w, r, http.StatusTooManyRequests, accountPage(view))
		return
	}
	err := a.staff.ChangePassword(ctx, sess, addr, current, next)
	if errors.Is(err, staff.ErrBadCredentials) {
		try.Failed()
	} else if err == nil {
		try.Succeeded()
	} else {
		try.Abandoned()
	}
	var bad *staff.InputError
	switch {
	case err == nil:
		http.Redirect(w, r, accountPath+"?changed=1", http.StatusSeeOther)
	case errors.Is(err, staff.ErrBadCredentials):
		view.Error = "The current password is wrong."
		render(w, r, http.StatusUnauthorized, accountPage(view))
	case errors.As(err, &bad):
		view.Error = bad.Message + "."
		render(w, r, http.StatusBadRequest, accountPage(view))
	case errors.Is(err, staff.ErrNoSession):
		http.Redirect(w, r, loginPath, http.StatusSeeOther)
	default:
		serverError(w, r, err)
	}
}
