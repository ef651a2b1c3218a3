package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"sync"
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
	// byPair is the budget of one address for one identity: what a
	// password form refuses by before it checks a password (see
	// PairBlocked).
	byPair *lru.Cache[string, *pairBudget]
	// inFlight counts the password checks under way per address.
	mu       sync.Mutex
	inFlight map[string]int
}

// pairBudget is one (address, identity) budget and whether a try it
// refused has been reported since it was last spent. A bucket of its own
// rather than a rate.Limiter: a try taken before the password is checked
// is given back when it was right, which rate.Reservation.Cancel does not
// do once the reservation's time has passed.
type pairBudget struct {
	mu        sync.Mutex
	tokens    float64
	at        time.Time
	perMinute int
	refused   int
	announced bool
}

// refill adds what has been regained since the last look; p.mu held.
func (p *pairBudget) refill(now time.Time) {
	p.tokens = min(float64(p.perMinute), p.tokens+now.Sub(p.at).Minutes()*float64(p.perMinute))
	p.at = now
}

// left is how many tries p holds now; p.mu held.
func (p *pairBudget) left() float64 {
	p.refill(time.Now())
	return p.tokens
}

// take spends one try if there is one; p.mu held.
func (p *pairBudget) take() bool {
	if p.left() < 1 {
		return false
	}
	p.tokens--
	return true
}

// giveBack returns a try take spent; p.mu held.
func (p *pairBudget) giveBack() {
	p.refill(time.Now())
	p.tokens = min(float64(p.perMinute), p.tokens+1)
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
	pairs, err := lru.New[string, *pairBudget](100_000)
	if err != nil {
		panic(err)
	}
	return &FailureLimiter{perMinute: perMinute, byAddr: newBuckets(), byIdentity: newBuckets(), byPair: pairs}
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
		Addr:     spent(l.byAddr, AddressKey(a.Addr)),
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
	l.spend(l.byAddr, AddressKey(a.Addr))
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

// AddressKey is what a client address is counted under, by this limiter
// and by every other per-address cap: IPv6 clients by their /64, since
// anyone with one IPv6 address usually has the 2^64 of its network.
func AddressKey(addr string) string {
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

// MaxConcurrentPerAddress is how many password checks one address may
// have under way at once: each costs a hash (tens of milliseconds and
// 19 MiB), and the server has a few hashing slots for everyone.
const MaxConcurrentPerAddress = 4

// PairTry is a sign-in TakePair let through, holding one try of its
// (address, identity) budget and one of its address's concurrent checks
// until it ends.
type PairTry struct {
	l    *FailureLimiter
	a    Attempt
	p    *pairBudget
	once sync.Once
}

// TakePair is asked before a password is checked. It takes one try of
// a's (address, identity) budget up front, so that a burst of concurrent
// tries cannot all pass before the first failure is counted, and one of
// the address's MaxConcurrentPerAddress checks. It returns nil, and how
// long to wait, when either is spent: the try is then refused without
// checking the password (call PairRefused to count it). Failures from
// other addresses never spend this budget: whoever signs in from
// elsewhere is never blocked by a guesser.
func (l *FailureLimiter) TakePair(a Attempt) (*PairTry, time.Duration) {
	retry := time.Minute / time.Duration(l.perMinute)
	// The concurrency cap first: a try it refuses adds no budget, or a
	// guesser keeping their checks busy could push out, with made-up
	// identities checked for free, the budget they spent on the one they
	// are guessing.
	if !l.enter(AddressKey(a.Addr)) {
		return nil, time.Second
	}
	p := l.pair(a)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.take() {
		l.leave(AddressKey(a.Addr))
		return nil, retry
	}
	p.refused, p.announced = 0, false // not spent: a new lockout will be news again
	return &PairTry{l: l, a: a, p: p}, 0
}

// Succeeded ends a try whose password was right: its try is given back.
func (t *PairTry) Succeeded() {
	t.once.Do(func() {
		t.p.mu.Lock()
		t.p.giveBack()
		t.p.mu.Unlock()
		t.l.leave(AddressKey(t.a.Addr))
	})
}

// Abandoned ends a try that was not checked (the database did not
// answer, no hashing slot was free): its try is given back, as nothing was
// learnt about the password.
func (t *PairTry) Abandoned() { t.Succeeded() }

// Failed ends a try whose credentials were wrong: it keeps its try, spends
// the address's and the identity's budgets too (Failed), and reports
// whether the pair's budget is now spent.
func (t *PairTry) Failed() (nowBlocked bool) {
	t.once.Do(func() {
		t.l.Failed(t.a)
		t.p.mu.Lock()
		nowBlocked = t.p.left() < 1
		t.p.mu.Unlock()
		t.l.leave(AddressKey(t.a.Addr))
	})
	return nowBlocked
}

// Kept ends a try whose credentials were wrong, keeping its try, for a
// caller that counts the failure against the address's and the identity's
// budgets itself (Failed).
func (t *PairTry) Kept() {
	t.once.Do(func() { t.l.leave(AddressKey(t.a.Addr)) })
}

// PairRefused counts a try TakePair refused for a spent budget, and
// reports whether it is the first since the budget was spent (the one to
// write down: the others are counted, not recorded one by one) and how
// many were refused so far.
func (l *FailureLimiter) PairRefused(a Attempt) (first bool, refused int) {
	p, ok := l.byPair.Get(pairKey(a))
	if !ok {
		return false, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused++
	first, p.announced = !p.announced, true
	return first, p.refused
}

// PairSpent reports whether a's (address, identity) budget has no try
// left, without taking one.
func (l *FailureLimiter) PairSpent(a Attempt) bool {
	p, ok := l.byPair.Get(pairKey(a))
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.left() < 1
}

// SpendPair spends one try of a's (address, identity) budget alone: for
// failures counted under a budget of their own, such as an address's
// sign-ins with unknown usernames.
func (l *FailureLimiter) SpendPair(a Attempt) {
	p := l.pair(a)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.take()
}

// pair is a's (address, identity) budget, made full if it has none.
func (l *FailureLimiter) pair(a Attempt) *pairBudget {
	key := pairKey(a)
	if p, ok := l.byPair.Get(key); ok {
		return p
	}
	p := &pairBudget{tokens: float64(l.perMinute), at: time.Now(), perMinute: l.perMinute}
	if prev, found, _ := l.byPair.PeekOrAdd(key, p); found {
		return prev
	}
	return p
}

func (l *FailureLimiter) enter(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[addr] >= MaxConcurrentPerAddress {
		return false
	}
	if l.inFlight == nil {
		l.inFlight = map[string]int{}
	}
	l.inFlight[addr]++
	return true
}

func (l *FailureLimiter) leave(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[addr] <= 1 {
		delete(l.inFlight, addr) // the map holds addresses with checks under way only
		return
	}
	l.inFlight[addr]--
}

func pairKey(a Attempt) string {
	return AddressKey(a.Addr) + "|" + identityKey(a.Identity)
}
