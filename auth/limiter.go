package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// DefaultFailuresPerMinute is how many failed sign-ins an address, or an
// identity, may make per minute, in a burst or spread out.
const DefaultFailuresPerMinute = 20

// FailureLimiter keeps guessing slow and noisy attackers visible. It counts
// failed sign-ins twice: per client address, and per presented identity (a
// username, or the first characters of a token), so that an attacker who
// spreads guesses over many addresses is counted too. Each budget holds
// perMinute tries and regains one every minute/perMinute.
//
// It never decides alone: the caller checks the credentials first, lets
// valid ones through whatever the budgets say (a client behind the same
// NAT or proxy as an attacker must not be locked out), and answers a
// failure with 429 instead of 401 once a budget is spent. That is how the
// API's bearer tokens use it (guessing a token of 256 random bits is
// hopeless anyway). A password form, whose secrets can be guessed, may
// prefer to refuse a spent identity before checking its password; Blocked
// tells the two budgets apart for that.
//
// Memory is bounded: the 100,000 keys of each kind that failed most
// recently. (Not golang-lru's expirable cache: its sweeping goroutine never
// stops. A bucket that has refilled is as good as none, so nothing needs
// to expire.) Identities are kept only as SHA-256 digests, never as
// presented. Each server instance counts for itself; limit at the load
// balancer too.
type FailureLimiter struct {
	perMinute  int
	byAddr     *lru.Cache[string, *rate.Limiter]
	byIdentity *lru.Cache[string, *rate.Limiter]
}

// Attempt is one sign-in: where it came from and whom it claimed to be.
type Attempt struct {
	// Addr is the client's address (see package clientaddr).
	Addr string
	// Identity is what the attempt claimed: "basic:" + username, or
	// "bearer:" + a token's first characters. Empty counts nothing.
	Identity string
}

// Blocked says which of an attempt's budgets are spent.
type Blocked struct {
	Addr, Identity bool
	// RetryAfter is when the next try is regained.
	RetryAfter time.Duration
}

// Any reports whether either budget is spent.
func (b Blocked) Any() bool { return b.Addr || b.Identity }

// NewFailureLimiter returns a limiter allowing perMinute failures per
// address and per identity; zero or less means DefaultFailuresPerMinute.
func NewFailureLimiter(perMinute int) *FailureLimiter {
	if perMinute <= 0 {
		perMinute = DefaultFailuresPerMinute
	}
	return &FailureLimiter{perMinute: perMinute, byAddr: newBuckets(), byIdentity: newBuckets()}
}

func newBuckets() *lru.Cache[string, *rate.Limiter] {
	c, err := lru.New[string, *rate.Limiter](100_000)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return c
}

// Blocked reports which of a's budgets have no try left.
func (l *FailureLimiter) Blocked(a Attempt) Blocked {
	b := Blocked{
		Addr:     spent(l.byAddr, addrKey(a.Addr)),
		Identity: a.Identity != "" && spent(l.byIdentity, identityKey(a.Identity)),
	}
	if b.Any() {
		b.RetryAfter = time.Minute / time.Duration(l.perMinute)
	}
	return b
}

// Failed spends one try of each of a's budgets and reports the budgets
// this failure has just spent (not those spent before): the moment to log
// a lockout, once.
func (l *FailureLimiter) Failed(a Attempt) (nowBlocked Blocked) {
	before := l.Blocked(a)
	l.spend(l.byAddr, addrKey(a.Addr))
	if a.Identity != "" {
		l.spend(l.byIdentity, identityKey(a.Identity))
	}
	after := l.Blocked(a)
	return Blocked{
		Addr:       after.Addr && !before.Addr,
		Identity:   after.Identity && !before.Identity,
		RetryAfter: after.RetryAfter,
	}
}

func spent(m *lru.Cache[string, *rate.Limiter], key string) bool {
	lim, ok := m.Get(key)
	return ok && lim.Tokens() < 1
}

func (l *FailureLimiter) spend(m *lru.Cache[string, *rate.Limiter], key string) {
	lim, ok := m.Get(key)
	if !ok {
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(l.perMinute)), l.perMinute)
		m.Add(key, lim)
	}
	lim.Allow()
}

// addrKey is what an address is counted under: IPv6 clients by their /64,
// since anyone with one IPv6 address usually has the 2^64 of its network.
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

func identityKey(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:16])
}
