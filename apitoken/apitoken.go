// Package apitoken keeps CMPay's managed API tokens: created, listed and
// revoked with `cmpay tokens`, each with scopes and, optionally, the one
// client it acts for. It stores a token's SHA-256 only (see
// models.APIToken) and turns a presented token into the auth.Principal the
// request acts for.
package apitoken

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/clientid"
	"github.com/cmpay/cmpay/internal/lastuse"
	"github.com/cmpay/cmpay/internal/secrets"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// Prefix starts every token, so that a leaked one is recognisable (secret
// scanners look for such prefixes) and a string that cannot be a token is
// refused without a database lookup.
const Prefix = "cmpay_"

// tokenLen is a token's length: the prefix and 32 random bytes in
// unpadded URL-safe base64.
var tokenLen = len(Prefix) + base64.RawURLEncoding.EncodedLen(32)

// ErrNotFound: no token has that id.
var ErrNotFound = errors.New("no such token")

// ErrInvalid: what a token was asked to be is not allowed (its name,
// client or scopes); the message says why.
var ErrInvalid = errors.New("invalid token request")

// Token is a managed token as listed; the secret is never kept.
type Token struct {
	ID         string
	Name       string
	ClientID   string // empty: every client
	Scopes     []auth.Scope
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Options tunes a Store. The zero value is what the server uses.
type Options struct {
	// CacheTTL is how long a token, once looked up, is believed without
	// asking the database again: also how long a revocation takes to reach
	// a running server. Zero means 10 s; negative, no cache.
	CacheTTL time.Duration
	// TouchEvery is how stale a token's lastUsedAt may get before a use
	// writes it again. Zero means a minute.
	TouchEvery time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger takes the failures to record a token's last use; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Store keeps tokens in the database.
type Store struct {
	st         store
	touchEvery time.Duration
	// cache holds looked-up tokens by hash until their expiry; nil: none.
	// (Not golang-lru's expirable cache: its sweeping goroutine never
	// stops.)
	cache    *lru.Cache[string, cached]
	cacheTTL time.Duration
	// cacheMu orders a lookup's caching against Revoke: a lookup caches
	// only if no revocation ended while it read the row (revocations
	// unchanged), so a row read just before a revocation committed is never
	// cached after Revoke removed the token's entry.
	cacheMu     sync.Mutex
	revocations uint64
	now         func() time.Time
	// touches records last uses off the requests.
	touches *lastuse.Writer
}

type cached struct {
	principal auth.Principal
	until     time.Time
}

// NewStore keeps tokens in db, which must be migrated (models.APIToken). It
// panics when db is neither PostgreSQL nor SQLite, the only databases
// database.Open opens: a mistake of the program's, not of its
// configuration.
func NewStore(db *gorm.DB, opts Options) *Store {
	st, err := newStore(db)
	if err != nil {
		panic(fmt.Sprintf("apitoken: %v", err))
	}
	clock := opts.Now
	if clock == nil {
		clock = time.Now
	}
	s := &Store{st: st, touchEvery: opts.TouchEvery, now: func() time.Time { return clock().UTC() }}
	if s.touchEvery <= 0 {
		s.touchEvery = time.Minute
	}
	s.touches = lastuse.New(lastuse.Config{Every: s.touchEvery, Now: func() time.Time { return s.now() }, Logger: opts.Logger,
		What: "record an API token's last use (requests go on; a later use records it)"})
	ttl := opts.CacheTTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	if ttl > 0 {
		s.cache, _ = lru.New[string, cached](10_000) // fails only for a size below 1
		s.cacheTTL = ttl
	}
	return s
}

// maxName is the longest name or client id a token may have, as a payment's
// client id.
const maxName = 100

// Create makes a token and returns it with its secret, which is shown once
// and never stored. clientID binds it to that client; empty, to none.
// audit writes the change's audit entry in the same transaction.
func (s *Store) Create(ctx context.Context, name, clientID string, scopes []auth.Scope, audit Audit) (Token, string, error) {
	if err := checkText("name", name, true); err != nil {
		return Token{}, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := checkText("client", clientID, false); err != nil {
		return Token{}, "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	clientID = clientid.Normalize(clientID)
	scopes = auth.Sorted(scopes)
	if len(scopes) == 0 {
		return Token{}, "", fmt.Errorf("%w: a token needs at least one scope: %s", ErrInvalid, auth.JoinScopes(auth.AllScopes))
	}
	// A payments:create token is meant for a shopper's page, where every
	// shopper has it: unbound, it would create payments for any client and
	// read any client's payment by id.
	if clientID == "" && slices.Contains(scopes, auth.PaymentsCreate) {
		return Token{}, "", fmt.Errorf("%w: a token with %s is for a shopper's page and must be bound to a client",
			ErrInvalid, auth.PaymentsCreate)
	}
	secret := Prefix + secrets.Random()
	row := models.APIToken{
		ID:        "tok_" + ulid.Make().String(),
		Name:      name,
		ClientID:  clientID,
		Scopes:    auth.JoinScopes(scopes),
		TokenHash: secrets.Hash(secret),
		CreatedAt: s.now(),
	}
	if err := s.st.create(ctx, row, audit); err != nil {
		return Token{}, "", err
	}
	return tokenOf(row), secret, nil
}

// Audit writes the audit log's entry for a token created or revoked, in the
// change's own transaction: the token and its entry commit together, or
// neither does (package staff makes them: staff.Store.TokenAudit). It must
// write through tx alone: on SQLite the server has one connection, which
// tx holds. unchanged is true for a revocation of a token that was revoked
// already, which changes nothing. A nil Audit records nothing.
type Audit func(ctx context.Context, tx sqlq.Runner, t Token, unchanged bool) error

func (a Audit) write(ctx context.Context, tx sqlq.Runner, t Token, unchanged bool) error {
	if a == nil {
		return nil
	}
	return a(ctx, tx, t, unchanged)
}

// checkText refuses names and client ids that would not show plainly in
// a list: too long, not UTF-8, or with control or invisible characters.
func checkText(what, v string, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("the token needs a %s", what)
	case utf8.RuneCountInString(v) > maxName:
		return fmt.Errorf("the %s is longer than %d characters", what, maxName)
	case !utf8.ValidString(v):
		return fmt.Errorf("the %s is not valid UTF-8", what)
	case v != strings.TrimSpace(v):
		return fmt.Errorf("the %s starts or ends with a space", what)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) }) >= 0:
		return fmt.Errorf("the %s holds a control or invisible character", what)
	}
	return nil
}

// List returns every token, revoked ones included, oldest first.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	rows, err := s.st.tokens(ctx)
	if err != nil {
		return nil, err
	}
	tokens := make([]Token, len(rows))
	for i, r := range rows {
		tokens[i] = tokenOf(r)
	}
	return tokens, nil
}

// Revoke ends the token id at once in the database and on this server, and
// on other running servers within their CacheTTL. Revoking a revoked token
// changes nothing; the token is returned as it is now. audit writes the
// revocation's audit entry in the same transaction (told when nothing
// changed); an id that names no token writes none.
func (s *Store) Revoke(ctx context.Context, id string, audit Audit) (Token, error) {
	if !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		// No token has such an id, and PostgreSQL would refuse the query
		// (SQLSTATE 22021) rather than find nothing.
		return Token{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	row, ok, err := s.st.revoke(ctx, id, s.now(), audit)
	if err != nil {
		return Token{}, err
	}
	if !ok {
		return Token{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if s.cache != nil {
		// This server refuses it at once (the admin's page revokes here);
		// the others within their CacheTTL.
		s.cacheMu.Lock()
		s.revocations++
		s.cache.Remove(row.TokenHash)
		s.cacheMu.Unlock()
	}
	return tokenOf(row), nil
}

// Close stops recording tokens' uses: it ends the writes in flight and
// waits for them. The server closes its Store once it has stopped serving.
func (s *Store) Close() { s.touches.Close() }

// Authenticate returns the principal a presented token stands for, and
// whether it is a live token. A string that cannot be one of ours is
// refused without a lookup. Its use is recorded in lastUsedAt, at most
// once per TouchEvery (a busy token does not cost a write per request),
// in the background: the answer never waits for that write, nor fails
// with it.
func (s *Store) Authenticate(ctx context.Context, presented string) (auth.Principal, bool, error) {
	return s.authenticate(ctx, presented, 0)
}

// Recheck is Authenticate for a token that a long-lived connection (a
// WebSocket, an SSE stream) checks again every interval: it believes a
// cached lookup only if the cache would still believe it at the next
// check, so that a revocation ends the connection within CacheTTL, as it
// ends HTTP requests, and not CacheTTL and an interval later.
func (s *Store) Recheck(ctx context.Context, presented string, interval time.Duration) (auth.Principal, bool, error) {
	return s.authenticate(ctx, presented, max(interval, 0))
}

// authenticate looks presented up, believing a cached lookup that stays
// valid for margin more.
func (s *Store) authenticate(ctx context.Context, presented string, margin time.Duration) (auth.Principal, bool, error) {
	if len(presented) != tokenLen || !strings.HasPrefix(presented, Prefix) {
		return auth.Principal{}, false, nil
	}
	h := secrets.Hash(presented)
	if s.cache != nil {
		if c, ok := s.cache.Get(h); ok && s.now().Add(margin).Before(c.until) {
			return c.principal, true, nil
		}
	}
	gen := s.revocationsSoFar()
	row, ok, err := s.st.byHash(ctx, h)
	if err != nil {
		return auth.Principal{}, false, fmt.Errorf("look up token: %w", err)
	}
	if !ok || row.RevokedAt != nil {
		return auth.Principal{}, false, nil
	}
	s.touch(row)
	p := principalOf(row)
	if s.cache != nil {
		s.cacheMu.Lock()
		if s.revocations == gen {
			s.cache.Add(h, cached{principal: p, until: s.now().Add(s.cacheTTL)})
		}
		s.cacheMu.Unlock()
	}
	return p, true, nil
}

// revocationsSoFar is how many revocations this Store has made.
func (s *Store) revocationsSoFar() uint64 {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	return s.revocations
}

// touch records a use, now, when lastUsedAt is older than touchEvery, in
// the background (touches). The condition is repeated in the UPDATE, so
// that of several servers using the token at once, one writes.
func (s *Store) touch(row models.APIToken) {
	now := s.now()
	stale := now.Add(-s.touchEvery)
	if row.LastUsedAt != nil && row.LastUsedAt.After(stale) {
		return
	}
	s.touches.Start(row.ID, now, func(ctx context.Context) error {
		_, err := s.st.touch(ctx, row.ID, now, stale)
		return err
	})
}

func principalOf(row models.APIToken) auth.Principal {
	return auth.Principal{
		Kind:     auth.KindAPIToken,
		ID:       row.ID,
		Name:     row.Name,
		Scopes:   scopesOf(row.Scopes),
		ClientID: row.ClientID,
	}
}

func tokenOf(row models.APIToken) Token {
	return Token{
		ID:         row.ID,
		Name:       row.Name,
		ClientID:   row.ClientID,
		Scopes:     scopesOf(row.Scopes),
		CreatedAt:  row.CreatedAt,
		LastUsedAt: row.LastUsedAt,
		RevokedAt:  row.RevokedAt,
	}
}

// scopesOf reads stored scopes; a name this version does not know (written
// by a newer one) grants nothing.
func scopesOf(stored string) []auth.Scope {
	var scopes []auth.Scope
	for _, name := range strings.Split(stored, ",") {
		scopes = append(scopes, auth.Scope(strings.TrimSpace(name)))
	}
	return auth.Sorted(scopes)
}
