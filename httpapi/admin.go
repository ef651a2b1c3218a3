package httpapi

import (
	"net/http"
	"time"

	"github.com/cmpay/cmpay/staff"
)

// adminSignInLimiter lets the admin's sign-in form spend the same failure
// budget as every other credential check, through the limiter's own
// methods. The username is not counted yet: the limiter counts addresses.
type adminSignInLimiter struct{ l *failureLimiter }

func (a adminSignInLimiter) Blocked(addr, _ string) (bool, time.Duration) { return a.l.blocked(addr) }
func (a adminSignInLimiter) Failed(addr, _ string)                        { a.l.failed(addr) }

// staffBasic accepts HTTP Basic credentials of an enabled staff account
// with the admin role: how Prometheus, or an operator with curl, reads
// /metrics without an API token. The password check costs what a sign-in
// costs (argon2id), for unknown usernames too. A failed check that named a
// username is audited as a failed sign-in; successful scrapes, every few
// seconds, are not.
func staffBasic(st *staff.Store) func(*http.Request) bool {
	return func(r *http.Request) bool {
		user, pass, ok := r.BasicAuth()
		if !ok || st == nil {
			return false
		}
		acct, err := st.Verify(r.Context(), user, pass)
		if err == nil && acct.Role == staff.Admin {
			return true
		}
		if user != "" {
			who := staff.Actor{Username: staff.NormalizeUsername(user), Address: clientAddr(r)}
			_ = st.Record(r.Context(), who, staff.ActSignIn, who.Username, staff.OutcomeFailed,
				"HTTP Basic on "+r.URL.Path+": wrong username or password, disabled, or not an admin")
		}
		return false
	}
}
