// Package staff is who may use the admin UI and what they did there: staff
// accounts with roles and argon2id password hashes, signed-in sessions kept
// in the database (so every server instance knows them), and the
// append-only audit log.
//
// A request from a browser is checked in this order: the session cookie's
// token is hashed and looked up (Store.Session), which also says whether the
// account is still enabled and what its role is now; the role is compared
// with what the route needs (Role.Allows). Everything a staff member changes
// is written with its audit entry in one transaction.
package staff

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/lastuse"
)

// Role is what a staff member may do. Each role may do everything the
// roles before it may.
type Role string

const (
	// Viewer reads the payments list and pages, and exports the list.
	Viewer Role = "viewer"
	// Operator also captures, cancels and refunds payments.
	Operator Role = "operator"
	// Admin also manages staff accounts and reads the audit log.
	Admin Role = "admin"
)

// Roles lists the roles from least to most allowed.
var Roles = []Role{Viewer, Operator, Admin}

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether r may do what needs at least the role need.
func (r Role) Allows(need Role) bool { return r.Valid() && r.rank() >= need.rank() }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", invalid(fmt.Sprintf("role %q is not one of viewer, operator, admin", s))
	}
	return r, nil
}

// Account is a staff account as the UI and the command line show it.
type Account struct {
	ID                 int64
	Username           string
	Role               Role
	MustChangePassword bool
	Disabled           bool
	CreatedAt          time.Time
	LastSignInAt       time.Time // zero: never signed in
}

// The errors callers branch on.
var (
	// ErrBadCredentials: the username and password do not sign anyone in.
	// Deliberately one error for an unknown user, a wrong password and a
	// disabled account.
	ErrBadCredentials = errors.New("wrong username or password")
	// ErrNoSession: the token names no live session.
	ErrNoSession = errors.New("no session")
	// ErrNotFound: no account has that username.
	ErrNotFound = errors.New("no such staff account")
	// ErrInvalid: what was asked is not allowed or not well formed; the
	// error's text says why and may be shown.
	ErrInvalid = errors.New("invalid")
)

// InputError says what is wrong with a request, in words to show.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }
func (e *InputError) Unwrap() error { return ErrInvalid }

func invalid(msg string) error { return &InputError{Message: msg} }

// Config tunes a Store. The zero value is usable.
type Config struct {
	// IdleTimeout ends a session that has not been used for this long;
	// zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxAge ends a session this long after sign-in however much it is
	// used; zero means DefaultMaxAge.
	MaxAge time.Duration
	// Now is the clock; tests inject one. Nil means time.Now.
	Now func() time.Time
	// Hash is the argon2id cost of new hashes; zero means
	// DefaultHashParams. Tests make it cheap.
	Hash HashParams
	// HashWait is the longest a password check waits for a hashing slot
	// before it gives up with ErrBusy; zero means DefaultHashWait.
	HashWait time.Duration
	// Logger takes the failures to record a session's last use; nil means
	// slog.Default().
	Logger *slog.Logger
}

// DefaultHashWait bounds the wait for a hashing slot: a flood of sign-ins
// is answered "busy, try again" within it instead of holding everyone's
// sign-in until its deadline.
const DefaultHashWait = 2 * time.Second

// Defaults of Config.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxAge      = 12 * time.Hour
)

// touchEvery is how stale a session's LastUsedAt may get before a request
// rewrites it: at most one write per session a minute, not one per request.
// A session may therefore end up to this much before IdleTimeout after its
// last use, never after (Store.Session says why a write that lags or fails
// changes neither).
const touchEvery = time.Minute

// Store keeps staff accounts, sessions and the audit log in one database.
type Store struct {
	st        store
	idle      time.Duration
	maxAge    time.Duration
	clock     func() time.Time
	params    HashParams
	hashSlots chan struct{}
	hashWait  time.Duration
	// touches writes sessions' last uses beside the requests (Session).
	touches *lastuse.Writer
}

// New returns a Store over db, whose schema must be migrated
// (database.Migrate). It panics when db is neither PostgreSQL nor SQLite, the
// only databases database.Open opens: a mistake of the program's, not of
// its configuration.
func New(db *gorm.DB, cfg Config) *Store {
	st, err := newStore(db)
	if err != nil {
		panic(fmt.Sprintf("staff: %v", err))
	}
	s := &Store{st: st, idle: cfg.IdleTimeout, maxAge: cfg.MaxAge, clock: cfg.Now, params: cfg.Hash, hashWait: cfg.HashWait}
	if s.hashWait <= 0 {
		s.hashWait = DefaultHashWait
	}
	if s.idle <= 0 {
		s.idle = DefaultIdleTimeout
	}
	if s.maxAge <= 0 {
		s.maxAge = DefaultMaxAge
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.params == (HashParams{}) {
		s.params = DefaultHashParams
	}
	s.hashSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	// Keep: a use whose write failed counts for the idle timeout as long
	// as it can matter to it.
	s.touches = lastuse.New(lastuse.Config{Every: touchEvery, Keep: s.idle, Now: s.now, Logger: cfg.Logger,
		What: "record a staff session's last use (pages go on; a later use records it)"})
	return s
}

// Close stops recording sessions' uses: it ends the writes in flight and
// waits for them. The server closes its Store once it has stopped serving;
// a Store that never read a session has nothing to close.
func (s *Store) Close() { s.touches.Close() }

// IdleTimeout is how long an unused session lives.
func (s *Store) IdleTimeout() time.Duration { return s.idle }

// now is the current time as stored: UTC, to the microsecond PostgreSQL keeps.
func (s *Store) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// NormalizeUsername is how a username is stored and looked up: trimmed and
// lower-cased.
func NormalizeUsername(u string) string { return strings.ToLower(strings.TrimSpace(u)) }

// checkUsername: 1 to 64 characters, letters, digits and . _ - @ only, so a
// username is safe in a URL path, a log line and a CSV cell as it is.
func checkUsername(u string) error {
	if u == "" || len(u) > 64 {
		return invalid("a username has 1 to 64 characters")
	}
	for _, c := range u {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '@'
		if !ok {
			return invalid(fmt.Sprintf("a username may contain only letters, digits and . _ - @; %q is not allowed", c))
		}
	}
	if strings.HasPrefix(u, "-") {
		return invalid("a username must not start with -")
	}
	return nil
}
