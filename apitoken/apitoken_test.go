package apitoken

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
)

func TestCreateAndAuthenticate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(s.Close)
		tok, secret, err := s.Create(ctx, "shop-7 checkout", "shop-7", []auth.Scope{auth.PaymentsWrite, auth.PaymentsRead}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, Prefix) || len(secret) != tokenLen || !strings.HasPrefix(tok.ID, "tok_") {
			t.Fatalf("token %q, id %q", secret, tok.ID)
		}
		// Only the digest is stored.
		var rows []models.APIToken
		db.Gorm.Find(&rows)
		if len(rows) != 1 || rows[0].TokenHash == "" || strings.Contains(rows[0].TokenHash, secret[len(Prefix):len(Prefix)+8]) {
			t.Fatalf("stored %+v", rows)
		}

		p, ok, err := s.Authenticate(ctx, secret)
		if err != nil || !ok {
			t.Fatalf("the token was not accepted: %v", err)
		}
		if p.Kind != auth.KindAPIToken || p.ID != tok.ID || p.Name != "shop-7 checkout" || p.ClientID != "shop-7" ||
			!slices.Equal(p.Scopes, []auth.Scope{auth.PaymentsRead, auth.PaymentsWrite}) {
			t.Errorf("principal %+v", p)
		}
		other, _, err := s.Create(ctx, "metrics", "", []auth.Scope{auth.MetricsRead}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if other.ClientID != "" {
			t.Errorf("an unbound token got the client %q", other.ClientID)
		}

		for _, wrong := range []string{"", "nope", secret[:len(secret)-1] + "x", strings.ToUpper(secret), secret + "x", Prefix + strings.Repeat("A", 43)} {
			if _, ok, err := s.Authenticate(ctx, wrong); ok || err != nil {
				t.Errorf("%q: accepted %v, err %v", wrong, ok, err)
			}
		}
	})
}

func TestCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := NewStore(dbtest.SQLite(t).Gorm, Options{})
	t.Cleanup(s.Close)
	for name, args := range map[string][3]string{
		"no name":            {"", "", ""},
		"a long name":        {strings.Repeat("n", 101), "", ""},
		"a newline":          {"a\nb", "", ""},
		"a bidi override":    {"ok", "shop\u202e7", ""},
		"a zero-width space": {"ok", "shop\u200b7", ""},
		"surrounding space":  {"ok", " shop-7", ""},
		"no scope":           {"ok", "", "none"},
		"a page's, unbound":  {"ok", "", "create"},
	} {
		scopes := auth.DefaultScopes
		switch args[2] {
		case "none":
			scopes = nil
		case "create":
			scopes = []auth.Scope{auth.PaymentsCreate}
		}
		if _, _, err := s.Create(context.Background(), args[0], args[1], scopes, nil); err == nil {
			t.Errorf("%s: created", name)
		}
	}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(s.Close)
		tok, secret, err := s.Create(ctx, "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.Authenticate(ctx, secret); !ok {
			t.Fatal("a new token was refused")
		}
		revoked, err := s.Revoke(ctx, tok.ID, nil)
		if err != nil || revoked.RevokedAt == nil {
			t.Fatalf("revoke: %+v, %v", revoked, err)
		}
		if _, ok, _ := s.Authenticate(ctx, secret); ok {
			t.Error("a revoked token was accepted")
		}
		again, err := s.Revoke(ctx, tok.ID, nil)
		if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Errorf("revoking again: %+v, %v; want the first revocation kept", again, err)
		}
		if _, err := s.Revoke(ctx, "tok_nope", nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoking an unknown id: %v", err)
		}
		list, err := s.List(ctx)
		if err != nil || len(list) != 1 || list[0].RevokedAt == nil {
			t.Errorf("list after revoking: %+v, %v", list, err)
		}
	})
}

// TestAuditInTheSameTransaction: the audit entry is written in the
// change's own transaction. An audit that fails undoes the token's creation
// or revocation; one that succeeds sees the change, and commits with it.
func TestAuditInTheSameTransaction(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		// An audit that wrote past tx would wait forever for SQLite's one
		// connection: fail in seconds instead.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(s.Close)
		failing := func(context.Context, sqlq.Runner, Token, bool) error { return errAuditDown }
		var seen []Token
		var unchanged []bool
		recording := func(ctx context.Context, tx sqlq.Runner, tok Token, same bool) error {
			row, ok, err := readToken(ctx, tx, statements.SQL("token"), tok.ID)
			if err != nil || !ok || (row.RevokedAt == nil) != (tok.RevokedAt == nil) {
				t.Errorf("the audit does not see the change to %s in its transaction: %+v, %v, %v", tok.ID, row, ok, err)
			}
			seen, unchanged = append(seen, tok), append(unchanged, same)
			return nil
		}

		if _, _, err := s.Create(ctx, "lost", "", auth.DefaultScopes, failing); !errors.Is(err, errAuditDown) {
			t.Fatalf("create with a failing audit: %v, want its error", err)
		}
		if list, err := s.List(ctx); err != nil || len(list) != 0 {
			t.Fatalf("a token whose audit failed was kept: %+v, %v", list, err)
		}

		tok, secret, err := s.Create(ctx, "kept", "", auth.DefaultScopes, recording)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Revoke(ctx, tok.ID, failing); !errors.Is(err, errAuditDown) {
			t.Fatalf("revoke with a failing audit: %v, want its error", err)
		}
		if _, ok, _ := s.Authenticate(ctx, secret); !ok {
			t.Fatal("a revocation whose audit failed took effect")
		}
		if _, err := s.Revoke(ctx, tok.ID, recording); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Revoke(ctx, tok.ID, recording); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Revoke(ctx, "tok_nope", recording); !errors.Is(err, ErrNotFound) {
			t.Fatalf("revoking an unknown id: %v", err)
		}
		if len(seen) != 3 || seen[0].ID != tok.ID || seen[0].RevokedAt != nil || seen[1].RevokedAt == nil ||
			!slices.Equal(unchanged, []bool{false, false, true}) {
			t.Errorf("audited %+v (unchanged %v); want the creation, the revocation, then a revocation that changed "+
				"nothing, of %s, and nothing for an unknown id", seen, unchanged, tok.ID)
		}
	})
}

var errAuditDown = errors.New("audit log unavailable")

// A running server believes a token for CacheTTL: a revocation reaches it
// that late, and not before.
func TestRevocationReachesACachingServer(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	server := NewStore(db.Gorm, Options{CacheTTL: ttl})
	t.Cleanup(server.Close)
	cli := NewStore(db.Gorm, Options{})
	t.Cleanup(cli.Close)
	tok, secret, err := cli.Create(ctx, "ci", "", auth.DefaultScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := server.Authenticate(ctx, secret); !ok {
		t.Fatal("refused")
	}
	if _, err := cli.Revoke(ctx, tok.ID, nil); err != nil {
		t.Fatal(err)
	}
	revokedAt := time.Now()
	for {
		_, ok, err := server.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Since(revokedAt) > ttl+5*time.Second {
			t.Fatalf("the revoked token is still accepted %s after revocation", time.Since(revokedAt))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A connection that checks its token again every interval believes the
// cache only while the cache would still believe it at the next check: a
// revocation ends it within CacheTTL of the lookup, as a request, and not
// CacheTTL and an interval later. A request at the same moment still gets
// the cached answer.
func TestRecheckEndsWithinTheCacheTTL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		const ttl, interval = 10 * time.Second, 2 * time.Second
		clock := stripedouble.NewManualClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
		server := NewStore(db.Gorm, Options{CacheTTL: ttl, Now: clock.Now})
		t.Cleanup(server.Close)
		cli := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(cli.Close)
		tok, secret, err := cli.Create(ctx, "socket", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := server.Authenticate(ctx, secret); !ok || err != nil {
			t.Fatalf("refused: %v", err)
		}
		if _, err := cli.Revoke(ctx, tok.ID, nil); err != nil {
			t.Fatal(err)
		}
		clock.Add(ttl - interval - time.Millisecond)
		if _, ok, err := server.Recheck(ctx, secret, interval); !ok || err != nil {
			t.Fatalf("recheck %v after the lookup, its cache still good past the next check: refused (%v)", ttl-interval, err)
		}
		clock.Add(2 * time.Millisecond)
		if _, ok, _ := server.Recheck(ctx, secret, interval); ok {
			t.Errorf("recheck: the revoked token is believed though its cache ends before the next check")
		}
		if _, ok, _ := server.Authenticate(ctx, secret); !ok {
			t.Errorf("a request within CacheTTL was refused: its cache entry was lost")
		}
		clock.Add(interval)
		if _, ok, _ := server.Authenticate(ctx, secret); ok {
			t.Errorf("a request past CacheTTL still believes the revoked token")
		}
	})
}

// lastUsedAt is written on first use and then at most once per
// TouchEvery, however often the token is used.
func TestLastUsedAt(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(s.Close)
		clock := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
		s.now = func() time.Time { return clock }
		tok, secret, err := s.Create(ctx, "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		lastUsed := func() *time.Time {
			t.Helper()
			var row models.APIToken
			if err := db.Gorm.Take(&row, "id = ?", tok.ID).Error; err != nil {
				t.Fatal(err)
			}
			return row.LastUsedAt
		}
		if lastUsed() != nil {
			t.Fatal("a new token has a lastUsedAt")
		}
		use := func() {
			t.Helper()
			if _, ok, err := s.Authenticate(ctx, secret); !ok || err != nil {
				t.Fatalf("refused: %v", err)
			}
			s.touches.Wait() // the use is written in the background
		}
		use()
		first := lastUsed()
		if first == nil || !first.Equal(clock) {
			t.Fatalf("after the first use: %v, want %v", first, clock)
		}
		for i := range 50 {
			clock = clock.Add(time.Second)
			use()
			if got := lastUsed(); !got.Equal(*first) {
				t.Fatalf("use %d, %s later, wrote lastUsedAt again (%v)", i+2, clock.Sub(*first), got)
			}
		}
		clock = first.Add(time.Minute + time.Second)
		use()
		if got := lastUsed(); !got.Equal(clock) {
			t.Errorf("a minute later: %v, want %v", got, clock)
		}
	})
}

// TestRevocationEndsAtOnceOnTheRevokingServer: the server that revokes a
// token (the admin's API tokens page) forgets its cached lookup at once;
// only the other servers take up to CacheTTL.
func TestRevocationEndsAtOnceOnTheRevokingServer(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	server := NewStore(db.Gorm, Options{CacheTTL: time.Hour})
	t.Cleanup(server.Close)
	tok, secret, err := server.Create(ctx, "leaked", "", auth.DefaultScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := server.Authenticate(ctx, secret); !ok {
		t.Fatal("refused")
	}
	if _, err := server.Revoke(ctx, tok.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := server.Authenticate(ctx, secret); ok || err != nil {
		t.Errorf("after its revocation on this server: accepted %v (%v), want refused", ok, err)
	}
}

// heldLookup holds the first token lookup after it has read the row, until
// let is closed: a lookup racing a revocation.
type heldLookup struct {
	store
	once      sync.Once
	read, let chan struct{}
}

func (h *heldLookup) byHash(ctx context.Context, hash string) (models.APIToken, bool, error) {
	row, ok, err := h.store.byHash(ctx, hash)
	h.once.Do(func() {
		close(h.read)
		<-h.let
	})
	return row, ok, err
}

// TestALookupRacingRevokeIsNotCached: a lookup that read the token's row
// before its revocation committed may still answer its own request, but
// does not put the token back in the revoking server's cache.
func TestALookupRacingRevokeIsNotCached(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	server := NewStore(db.Gorm, Options{CacheTTL: time.Hour})
	t.Cleanup(server.Close)
	tok, secret, err := server.Create(ctx, "raced", "", auth.DefaultScopes, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := &heldLookup{store: server.st, read: make(chan struct{}), let: make(chan struct{})}
	server.st = held
	done := make(chan error, 1)
	go func() {
		_, _, err := server.Authenticate(ctx, secret)
		done <- err
	}()
	<-held.read
	if _, err := server.Revoke(ctx, tok.ID, nil); err != nil {
		t.Fatal(err)
	}
	close(held.let)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok, err := server.Authenticate(ctx, secret); ok || err != nil {
		t.Errorf("after a lookup that raced its revocation: accepted %v (%v), want refused", ok, err)
	}
}
