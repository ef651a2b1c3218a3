package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/clientaddr"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/web"
)

// adminSignInLimiter lets the admin's sign-in form and password change
// spend the failure budgets every credential check spends (per address and
// per username), and refuse by the budget of the address for the username
// before a password is checked (auth.FailureLimiter.TakePair).
type adminSignInLimiter struct{ l *auth.FailureLimiter }

func staffAttempt(addr, username string) auth.Attempt {
	return auth.Attempt{Addr: addr, Identity: "staff:" + username}
}

// anonymousIdentity counts an address's failures with usernames that are
// no account's; no username normalises to it (it holds a NUL).
const anonymousIdentity = "staff-unknown:\x00"

func (a adminSignInLimiter) Take(addr, username string) (web.SignInTry, bool, time.Duration) {
	try, wait := a.l.TakePair(staffAttempt(addr, username))
	if try == nil {
		return nil, a.l.PairSpent(staffAttempt(addr, username)), wait
	}
	return try, false, 0
}

func (a adminSignInLimiter) Refused(addr, username string) (bool, int) {
	return a.l.PairRefused(staffAttempt(addr, username))
}

func (a adminSignInLimiter) AnonymousSpent(addr string) bool {
	return a.l.PairSpent(auth.Attempt{Addr: addr, Identity: anonymousIdentity})
}

func (a adminSignInLimiter) AnonymousFailed(addr string) {
	a.l.SpendPair(auth.Attempt{Addr: addr, Identity: anonymousIdentity})
}

// staffBasic accepts HTTP Basic credentials of an enabled staff account
// with the admin role: how Prometheus, or an operator with curl, reads
// /metrics without an API token. The password check costs what a sign-in
// costs (argon2id), for unknown usernames too, and is refused unchecked
// as the sign-in form's is: when the address has spent its failures for
// the username, or has too many checks under way (auth.FailureLimiter's
// TakePair), so that a flood of bogus Basic credentials cannot take the
// hashing from staff signing in. Successful scrapes, every few seconds,
// are not audited; failures are (see auditBasicFailure), within the
// budgets that keep a guesser from filling the audit log.
func staffBasic(st *staff.Store, limiter *auth.FailureLimiter) check {
	return func(r *http.Request) (signIn, error) {
		user, pass, found := r.BasicAuth()
		if !found || st == nil {
			return signIn{}, nil
		}
		addr := clientaddr.From(r.Context())
		attempt, anonymous := staffAttempt(addr, staff.NormalizeUsername(user)), adminSignInLimiter{limiter}
		refused := signIn{identity: attempt.Identity}
		try, _ := limiter.TakePair(attempt)
		if try == nil {
			return refused, nil // counted by the guard, answered 429 once spent
		}
		// Read before this try counts: the guard answers 429 by the budgets
		// as they were before the failure (signInFailed).
		limited := limiter.Blocked(attempt).Any()
		quietUnknown := anonymous.AnonymousSpent(addr)
		ctx, cancel := context.WithTimeout(r.Context(), credentialCheckTimeout)
		defer cancel()
		acct, err := st.Verify(ctx, user, pass)
		// A temporary password (the first admin's generated one included)
		// reads /metrics too, as the contract's first hour needs: it is
		// still changed at the first sign-in in the browser, which this
		// leaves asking for it.
		if err == nil && acct.Role == staff.Admin {
			try.Succeeded()
			return signIn{ok: true, principal: auth.FullAccess(auth.KindAdmin, acct.Username)}, nil
		}
		if err != nil && !errors.Is(err, staff.ErrBadCredentials) {
			// The database did not answer (SERVICE_UNAVAILABLE), or every
			// hashing slot stayed busy: not a failed sign-in, and not to be
			// spent from the address's budget.
			try.Abandoned()
			if errors.Is(err, staff.ErrBusy) {
				// No slot came free in time: a 503 with Retry-After, as
				// for a database that did not answer in time.
				return signIn{}, fmt.Errorf("check staff credentials: %w (%w)", err, context.DeadlineExceeded)
			}
			return signIn{}, fmt.Errorf("check staff credentials: %w", err)
		}
		try.Kept()
		unknown := errors.Is(err, staff.ErrUnknownUsername)
		if unknown {
			anonymous.AnonymousFailed(addr)
		}
		if user != "" && !limited && !(unknown && quietUnknown) {
			auditBasicFailure(r, st, user)
		}
		return refused, nil
	}
}

// auditBasicFailure audits a failed HTTP Basic sign-in that will be
// answered 401. One answered 429 (the address or the username has spent
// its failures), or one with an unknown username once the address has
// spent its budget of those (adminSignInLimiter.AnonymousSpent), is
// counted and logged by the guard, not audited: the audit log is
// append-only, and a guesser must not be able to fill it, as with the
// sign-in form.
func auditBasicFailure(r *http.Request, st *staff.Store, user string) {
	_ = st.RecordFailedSignIn(r.Context(), user, clientaddr.From(r.Context()),
		"HTTP Basic on "+r.URL.Path+": wrong username or password, disabled, or not an admin")
}
