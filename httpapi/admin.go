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
)

// adminSignInLimiter lets the admin's sign-in form spend the same failure
// budgets as every other credential check: per address and per username.
type adminSignInLimiter struct{ l *auth.FailureLimiter }

func (a adminSignInLimiter) Blocked(addr, username string) (bool, time.Duration) {
	b := a.l.Blocked(auth.Attempt{Addr: addr, Identity: "staff:" + username})
	return b.Any(), b.RetryAfter
}

func (a adminSignInLimiter) Failed(addr, username string) {
	a.l.Failed(auth.Attempt{Addr: addr, Identity: "staff:" + username})
}

// staffBasic accepts HTTP Basic credentials of an enabled staff account
// with the admin role: how Prometheus, or an operator with curl, reads
// /metrics without an API token. The password check costs what a sign-in
// costs (argon2id), for unknown usernames too. A failed check that named a
// username is audited as a failed sign-in; successful scrapes, every few
// seconds, are not.
func staffBasic(st *staff.Store) check {
	return func(r *http.Request) (signIn, error) {
		user, pass, found := r.BasicAuth()
		if !found || st == nil {
			return signIn{}, nil
		}
		ctx, cancel := context.WithTimeout(r.Context(), credentialCheckTimeout)
		defer cancel()
		acct, err := st.Verify(ctx, user, pass)
		// An admin with a temporary password has it changed at first
		// sign-in, in the browser, before it serves anything else.
		if err == nil && acct.Role == staff.Admin && !acct.MustChangePassword {
			return signIn{ok: true, principal: auth.FullAccess(auth.KindAdmin, acct.Username)}, nil
		}
		if err != nil && !errors.Is(err, staff.ErrBadCredentials) {
			// The database did not answer (SERVICE_UNAVAILABLE): not a
			// failed sign-in, and not to be spent from the address's budget.
			return signIn{}, fmt.Errorf("check staff credentials: %w", err)
		}
		if user != "" {
			_ = st.RecordFailedSignIn(r.Context(), user, clientaddr.From(r.Context()),
				"HTTP Basic on "+r.URL.Path+": wrong username or password, disabled, not an admin, or a temporary password")
		}
		return signIn{identity: "staff:" + staff.NormalizeUsername(user)}, nil
	}
}
