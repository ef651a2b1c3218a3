package apitoken

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
)

// A token is accepted at once while the write of its last use waits for a
// lock another server holds (PostgreSQL: the token's row; SQLite: the
// write lock): the write goes on in the background, alone however often
// the token is used meanwhile, and lands once the lock is released.
func TestLastUseWaitingDelaysNoRequest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		t.Cleanup(s.Close)
		s.touches.Timeout = time.Hour // still waiting when the request has its answer, however slow the machine
		writes := &countedStore{store: s.st, started: make(chan struct{}, 100)}
		s.st = writes
		tok, secret, err := s.Create(t.Context(), "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		release := lockToken(t, db, tok.ID)
		// A write on the request's path waits for the lock: on PostgreSQL
		// as long as it is held, on SQLite its busy timeout (10 s).
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, ok, err := s.Authenticate(ctx, secret); !ok || err != nil {
			t.Fatalf("refused while its last use waited for a lock: %v", err)
		}
		select {
		case <-writes.started:
		case <-ctx.Done():
			t.Fatal("the last use's write never started")
		}
		for range 3 {
			s.touch(models.APIToken{ID: tok.ID}) // more uses, as stale: the write in flight is theirs
		}
		release()
		s.touches.Wait()
		if got := lastUsed(t, db, tok.ID); got == nil {
			t.Error("lastUsedAt not written once the lock was released")
		}
		if n := writes.touches.Load(); n != 1 {
			t.Errorf("%d writes of the last use, want 1", n)
		}
	})
}

// A write of the last use that fails (here: gives up waiting for a lock)
// fails no request: it is logged, the token's uses write nothing for
// TouchEvery, and the first use after that records it.
func TestLastUseFailingFailsNoRequest(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var logs logtest.Buffer
		clock := stripedouble.NewManualClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
		s := NewStore(db.Gorm, Options{CacheTTL: -1, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		t.Cleanup(s.Close)
		s.touches.Timeout = 20 * time.Millisecond
		writes := &countedStore{store: s.st, started: make(chan struct{}, 100)}
		s.st = writes
		tok, secret, err := s.Create(t.Context(), "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		use := func() {
			t.Helper()
			// A write on the request's path would wait past this (as above).
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, ok, err := s.Authenticate(ctx, secret); !ok || err != nil {
				t.Fatalf("refused: %v", err)
			}
		}
		release := lockToken(t, db, tok.ID)
		use()
		s.touches.Wait()
		if !strings.Contains(logs.String(), "record an API token's last use") {
			t.Fatalf("the failed write was not logged: %q", logs.String())
		}
		use() // within TouchEvery of the failure: no write
		s.touches.Wait()
		if n := writes.touches.Load(); n != 1 {
			t.Fatalf("%d writes, want 1: none within TouchEvery of a failed one", n)
		}
		release()
		s.touches.Timeout = time.Hour // however slow the machine, the next write is not given up
		clock.Add(time.Minute)
		use()
		s.touches.Wait()
		if got := lastUsed(t, db, tok.ID); got == nil || !got.Equal(clock.Now()) {
			t.Errorf("lastUsedAt %v after the lock went and a minute passed, want %v", got, clock.Now())
		}
		if !strings.Contains(logs.String(), "works again") {
			t.Errorf("the recovery was not logged: %q", logs.String())
		}
	})
}

// Close ends a write in flight and returns; no use writes after it.
func TestCloseEndsTheWriteInFlight(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := NewStore(db.Gorm, Options{CacheTTL: -1})
		s.touches.Timeout = time.Hour
		writes := &countedStore{store: s.st, started: make(chan struct{}, 100)}
		s.st = writes
		tok, secret, err := s.Create(t.Context(), "ci", "", auth.DefaultScopes, nil)
		if err != nil {
			t.Fatal(err)
		}
		lockToken(t, db, tok.ID)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, ok, err := s.Authenticate(ctx, secret); !ok || err != nil {
			t.Fatalf("refused: %v", err)
		}
		<-writes.started
		s.Close() // returns only once the waiting write has ended
		s.touch(models.APIToken{ID: tok.ID})
		if n := writes.touches.Load(); n != 1 {
			t.Errorf("%d writes, want 1: none after Close", n)
		}
	})
}

// lockToken holds a lock that keeps token id's row from being written
// until release (dbtest.HoldLock).
func lockToken(t *testing.T, db dbtest.DB, id string) (release func()) {
	t.Helper()
	return dbtest.HoldLock(t, db, "UPDATE api_tokens SET name = name WHERE id = $1", id)
}

// lastUsed reads token id's lastUsedAt.
func lastUsed(t *testing.T, db dbtest.DB, id string) *time.Time {
	t.Helper()
	var row models.APIToken
	if err := db.Gorm.Take(&row, "id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	return row.LastUsedAt
}

// countedStore is the real store, counting the writes of last uses and
// telling each on started.
type countedStore struct {
	store
	touches atomic.Int32
	started chan struct{}
}

func (c *countedStore) touch(ctx context.Context, id string, at, stale time.Time) (bool, error) {
	c.touches.Add(1)
	c.started <- struct{}{}
	return c.store.touch(ctx, id, at, stale)
}
