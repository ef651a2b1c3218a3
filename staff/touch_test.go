package staff

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/secrets"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/models"
)

// A page's session is accepted at once while the write of its last use
// waits for a lock another server holds (PostgreSQL: the session's row;
// SQLite: the write lock): the write goes on in the background, alone
// however often the session is used meanwhile, and lands once the lock is
// released.
func TestSessionLastUseWaitingDelaysNoPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		clock := stripedouble.NewManualClock(at0())
		s := New(db.Gorm, Config{Hash: cheapHash, Now: clock.Now})
		t.Cleanup(s.Close)
		s.touches.Timeout = time.Hour // still waiting when the page has its session, however slow the machine
		writes := countTouches(s)
		token := signedIn(t, s, "alice")
		clock.Add(2 * time.Minute) // the last use is due to be written
		release := lockSessions(t, db)
		// A write on the request's path waits for the lock: on PostgreSQL
		// as long as it is held, on SQLite its busy timeout (10 s).
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		sess, err := s.Session(ctx, token)
		if err != nil {
			t.Fatalf("no session while its last use waited for a lock: %v", err)
		}
		if !sess.LastUsedAt.Equal(clock.Now()) {
			t.Errorf("LastUsedAt %v, want this use's %v", sess.LastUsedAt, clock.Now())
		}
		select {
		case <-writes.started:
		case <-ctx.Done():
			t.Fatal("the last use's write never started")
		}
		used := clock.Now()
		for range 3 {
			clock.Add(time.Minute)
			// More uses, as the page would make them. (Not Session: on
			// SQLite the pool's one connection is the waiting write's
			// until it ends, here an hour, in production a second.)
			s.touch(sess.ID, clock.Now())
		}
		release()
		s.touches.Wait()
		if got := storedLastUse(t, db, token); !got.Equal(used) {
			t.Errorf("lastUsedAt %v once the lock was released, want %v", got, used)
		}
		if more := writes.written(); len(more) != 0 {
			t.Errorf("more writes of the last use, of %v, while one was in flight", more)
		}
	})
}

// A write of the last use that fails (here: gives up waiting for a lock)
// fails no page: it is logged, the session's uses write nothing for a
// minute, and the first use after that records it. Meanwhile the use
// that was not written counts for the idle timeout, on its own terms: it
// keeps the session from ending too early, by the idle check or by a
// sign-in's sweep, and not too late.
func TestSessionLastUseFailingFailsNoPage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var logs logtest.Buffer
		clock := stripedouble.NewManualClock(at0())
		s := New(db.Gorm, Config{Hash: cheapHash, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		t.Cleanup(s.Close)
		s.touches.Timeout = 20 * time.Millisecond
		writes := countTouches(s)
		alice, bob := signedIn(t, s, "alice"), signedIn(t, s, "bob")
		signIn := clock.Now()
		live := func(token string) bool {
			t.Helper()
			// A write on the request's path would wait past this (as above).
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			_, err := s.Session(ctx, token)
			if err != nil && !errors.Is(err, ErrNoSession) {
				t.Fatalf("a page failed: %v", err)
			}
			s.touches.Wait()
			return err == nil
		}

		clock.Add(29 * time.Minute)
		release := lockSessions(t, db)
		if !live(alice) || !live(bob) {
			t.Fatal("a session 29 minutes idle ended")
		}
		if !strings.Contains(logs.String(), "record a staff session's last use") {
			t.Fatalf("the failed write was not logged: %q", logs.String())
		}
		if got, now := writes.written(), clock.Now(); !slices.EqualFunc(got, []time.Time{now, now}, time.Time.Equal) {
			t.Fatalf("last uses written %v, want alice's and bob's, %v", got, now)
		}
		clock.Add(30 * time.Second)
		if !live(alice) {
			t.Fatal("ended 30 s after a use")
		}
		if got := writes.written(); len(got) != 0 {
			t.Fatalf("last uses written %v within a minute of a failed write, want none", got)
		}
		release()
		s.touches.Timeout = time.Hour // however slow the machine, the next write is not given up

		// 31 minutes after the stored use, 2 after alice's unwritten one:
		// a sign-in's sweep leaves her session, and it is live.
		clock.Add(90 * time.Second)
		signedIn(t, s, "carol")
		if !live(alice) {
			t.Fatal("a session used 2 minutes ago ended: its use was not written")
		}
		if got := storedLastUse(t, db, alice); !got.Equal(clock.Now()) {
			t.Errorf("lastUsedAt %v once the lock went and a minute passed, want %v", got, clock.Now())
		}
		if !strings.Contains(logs.String(), "works again") {
			t.Errorf("the recovery was not logged: %q", logs.String())
		}
		// Bob's unwritten use, 30 minutes ago, keeps his session no
		// longer than a written one would have.
		clock.Add(28 * time.Minute)
		if got := storedLastUse(t, db, bob); !got.Equal(signIn) {
			t.Fatalf("bob's lastUsedAt %v, want the sign-in's %v", got, signIn)
		}
		if live(bob) {
			t.Error("a session unused for 30 minutes is live: its last use was not written")
		}
		// Nor does alice's write, 30 minutes ago.
		clock.Add(2 * time.Minute)
		if live(alice) {
			t.Error("a session unused for 30 minutes is live")
		}
	})
}

// Close ends a write in flight and returns; no use writes after it.
func TestSessionCloseEndsTheWriteInFlight(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		clock := stripedouble.NewManualClock(at0())
		s := New(db.Gorm, Config{Hash: cheapHash, Now: clock.Now})
		s.touches.Timeout = time.Hour
		writes := countTouches(s)
		token := signedIn(t, s, "alice")
		clock.Add(2 * time.Minute)
		lockSessions(t, db)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		sess, err := s.Session(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		<-writes.started
		s.Close() // returns only once the waiting write has ended
		clock.Add(2 * time.Minute)
		s.touch(sess.ID, clock.Now())
		if got := writes.written(); len(got) != 0 {
			t.Errorf("last uses written %v after Close, want none", got)
		}
	})
}

// signedIn adds a viewer username and signs it in.
func signedIn(t *testing.T, s *Store, username string) (token string) {
	t.Helper()
	if _, err := s.Add(t.Context(), CommandLine, username, Viewer, "a-long-password"); err != nil {
		t.Fatal(err)
	}
	token, _, err := s.SignIn(t.Context(), SignInRequest{Username: username, Password: "a-long-password"})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// lockSessions holds a lock that keeps the sessions' rows from being
// written until release (dbtest.HoldLock).
func lockSessions(t *testing.T, db dbtest.DB) (release func()) {
	t.Helper()
	return dbtest.HoldLock(t, db, "UPDATE staff_sessions SET address = address")
}

// storedLastUse reads the last use stored for the session of token.
func storedLastUse(t *testing.T, db dbtest.DB, token string) time.Time {
	t.Helper()
	var row models.StaffSession
	if err := db.Gorm.Take(&row, "id = ?", secrets.Hash(token)).Error; err != nil {
		t.Fatal(err)
	}
	return row.LastUsedAt.UTC()
}

// countedStore is the real store, telling on started each use it is
// asked to write.
type countedStore struct {
	store
	started chan time.Time
}

func countTouches(s *Store) *countedStore {
	c := &countedStore{store: s.st, started: make(chan time.Time, 100)}
	s.st = c
	return c
}

func (c *countedStore) touchSession(ctx context.Context, id string, at, stale time.Time) error {
	c.started <- at
	return c.store.touchSession(ctx, id, at, stale)
}

// written takes the uses told on started and not taken yet.
func (c *countedStore) written() []time.Time {
	var ats []time.Time
	for {
		select {
		case at := <-c.started:
			ats = append(ats, at)
		default:
			return ats
		}
	}
}
