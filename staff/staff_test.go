package staff_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// cheap makes hashing fast in tests; the format and the code path are the
// production ones.
var cheap = staff.HashParams{Memory: 64, Time: 1, Threads: 1}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)} }

func newStore(t *testing.T, db dbtest.DB, c *clock) *staff.Store {
	t.Helper()
	cfg := staff.Config{Hash: cheap}
	if c != nil {
		cfg.Now = c.Now
	}
	s := staff.New(db.Gorm, cfg)
	t.Cleanup(s.Close)
	return s
}

var admin = staff.Actor{Username: "root", Address: "192.0.2.1"}

func mustAdd(t *testing.T, s *staff.Store, username string, role staff.Role, password string) {
	t.Helper()
	if _, err := s.Add(context.Background(), admin, username, role, password); err != nil {
		t.Fatalf("add %s: %v", username, err)
	}
}

func signIn(t *testing.T, s *staff.Store, username, password string) string {
	t.Helper()
	token, _, err := s.SignIn(context.Background(), staff.SignInRequest{Username: username, Password: password, Address: "198.51.100.7"})
	if err != nil {
		t.Fatalf("sign in %s: %v", username, err)
	}
	return token
}

// entries reads the whole audit log, newest first.
func entries(t *testing.T, s *staff.Store, f staff.AuditFilter) []staff.Entry {
	t.Helper()
	var out []staff.Entry
	after := ""
	for {
		page, err := s.AuditLog(context.Background(), f, 3, after)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Entries...)
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)

		// First start without ADMIN_PASSWORD: created, a temporary password
		// printed once, to be changed.
		b, err := s.Bootstrap(ctx, "Admin", "")
		if err != nil || !b.Created || len(b.Generated) < 20 {
			t.Fatalf("first start: %+v %v", b, err)
		}
		acct, err := s.Get(ctx, "admin")
		if err != nil || acct.Role != staff.Admin || !acct.MustChangePassword {
			t.Fatalf("account %+v %v", acct, err)
		}
		signIn(t, s, "admin", b.Generated)

		// Second start without it: nothing changes, nothing printed.
		if b2, err := s.Bootstrap(ctx, "admin", ""); err != nil || b2.Created || b2.Generated != "" {
			t.Fatalf("second start: %+v %v", b2, err)
		}
		before := signIn(t, s, "admin", b.Generated)

		// With ADMIN_PASSWORD: set (recovery), not to be changed, and
		// whoever signed in with the old password is signed out.
		if _, err := s.Bootstrap(ctx, "admin", "recovered-secret"); err != nil {
			t.Fatal(err)
		}
		if acct, _ := s.Get(ctx, "admin"); acct.MustChangePassword {
			t.Error("a password from ADMIN_PASSWORD must not be asked to be changed")
		}
		if _, _, err := s.SignIn(ctx, staff.SignInRequest{Username: "admin", Password: b.Generated}); !errors.Is(err, staff.ErrBadCredentials) {
			t.Errorf("the old password still works: %v", err)
		}
		if _, err := s.Session(ctx, before); !errors.Is(err, staff.ErrNoSession) {
			t.Errorf("a session made with the old password survived the recovery: %v", err)
		}
		after := signIn(t, s, "admin", "recovered-secret")

		// Started again with the same ADMIN_PASSWORD: nothing changes, and
		// nobody is signed out.
		if _, err := s.Bootstrap(ctx, "admin", "recovered-secret"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Session(ctx, after); err != nil {
			t.Errorf("a restart with the same ADMIN_PASSWORD ended a session: %v", err)
		}

		// A first start with ADMIN_PASSWORD creates it with that password.
		s2 := newStore(t, dbtest.Open(t, db.Dialect), nil)
		if b, err := s2.Bootstrap(ctx, "boss", "from-the-environment"); err != nil || !b.Created || b.Generated != "" {
			t.Fatalf("first start with a password: %+v %v", b, err)
		}
		signIn(t, s2, "boss", "from-the-environment")

		var got []string
		for _, e := range entries(t, s, staff.AuditFilter{Actor: "(server start)"}) {
			got = append(got, string(e.Action)+" "+e.Target+" "+e.Outcome)
		}
		if strings.Join(got, ",") != "password.set admin ok,staff.add admin ok" {
			t.Errorf("server start entries: %q", got)
		}
	})
}

func TestSignInFailures(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		mustAdd(t, s, "alice", staff.Operator, "alice-password-1")
		mustAdd(t, s, "bob", staff.Viewer, "bob-password-12")
		if err := s.Disable(ctx, admin, "bob"); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ user, pass string }{
			{"alice", "wrong-password"},
			{"nobody", "alice-password-1"},
			{"bob", "bob-password-12"}, // right password, disabled account
			{"(command line)", "x"},    // no account's name: not written as the staff member
			{"", ""},
		} {
			_, _, err := s.SignIn(ctx, staff.SignInRequest{Username: tt.user, Password: tt.pass, Address: "203.0.113.9", QuietUnknown: tt.user == ""})
			if !errors.Is(err, staff.ErrBadCredentials) || err.Error() != "wrong username or password" {
				t.Errorf("%s/%s: %v; want the one error that does not say which was wrong", tt.user, tt.pass, err)
			}
		}
		// Usernames are not case-sensitive.
		signIn(t, s, " ALICE ", "alice-password-1")

		var got []string
		for _, e := range entries(t, s, staff.AuditFilter{Action: staff.ActSignIn}) {
			got = append(got, e.Actor+"|"+e.Address+"|"+e.Target+"|"+e.Outcome+"|"+e.Detail)
		}
		want := []string{
			"alice|198.51.100.7|alice|ok|",
			"(unknown username)|203.0.113.9|(command line)|failed|unknown username",
			"bob|203.0.113.9|bob|failed|account disabled",
			"(unknown username)|203.0.113.9|nobody|failed|unknown username",
			"alice|203.0.113.9|alice|failed|wrong password",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("sign-in entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		c := newClock()
		s := newStore(t, db, c)
		mustAdd(t, s, "alice", staff.Operator, "alice-password-1")

		live := func(token string) bool {
			t.Helper()
			_, err := s.Session(ctx, token)
			if err != nil && !errors.Is(err, staff.ErrNoSession) {
				t.Fatal(err)
			}
			// The clock jumps 29 minutes while a use's write may still be
			// in flight, which one bounded at a second never is in real
			// time: a use then would be left to it, unseen by the idle
			// timeout.
			s.WaitTouches()
			return err == nil
		}

		// Idle: used within 30 minutes it lives; 30 minutes unused, it ends.
		token := signIn(t, s, "alice", "alice-password-1")
		sess, err := s.Session(ctx, token)
		if err != nil || sess.Account.Username != "alice" || sess.Account.Role != staff.Operator {
			t.Fatalf("session %+v %v", sess, err)
		}
		for range 5 {
			c.Add(29 * time.Minute)
			if !live(token) {
				t.Fatal("a session used every 29 minutes ended")
			}
		}
		c.Add(30 * time.Minute)
		if live(token) {
			t.Error("a session unused for 30 minutes is still live")
		}

		// Absolute: 12 hours after sign-in, however busy.
		token = signIn(t, s, "alice", "alice-password-1")
		for i := 1; i < 72; i++ {
			c.Add(10 * time.Minute)
			if !live(token) {
				t.Fatalf("ended after %d minutes of use", i*10)
			}
		}
		c.Add(10 * time.Minute)
		if live(token) {
			t.Error("a session outlived 12 hours")
		}

		// A token that was never issued, or empty.
		if live("made-up") || live("") {
			t.Error("a made-up token is live")
		}
	})
}

// TestSessionTouch: LastUsedAt is written at most once a minute, not on
// every request.
func TestSessionTouch(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		c := newClock()
		s := newStore(t, db, c)
		mustAdd(t, s, "alice", staff.Viewer, "alice-password-1")
		token := signIn(t, s, "alice", "alice-password-1")
		signedIn := c.Now()
		stored := func() time.Time {
			var row models.StaffSession
			if err := db.Gorm.First(&row).Error; err != nil {
				t.Fatal(err)
			}
			return row.LastUsedAt.UTC()
		}
		for range 5 {
			c.Add(10 * time.Second)
			if _, err := s.Session(ctx, token); err != nil {
				t.Fatal(err)
			}
		}
		if !stored().Equal(signedIn) {
			t.Errorf("last used rewritten within a minute: %s", stored())
		}
		c.Add(15 * time.Second)
		if _, err := s.Session(ctx, token); err != nil {
			t.Fatal(err)
		}
		s.WaitTouches() // written beside the request
		if !stored().Equal(c.Now()) {
			t.Errorf("last used %s after a minute, want %s", stored(), c.Now())
		}
	})
}

func TestSignOutAndDisable(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		mustAdd(t, s, "alice", staff.Operator, "alice-password-1")
		mustAdd(t, s, "bob", staff.Viewer, "bob-password-12")

		one, two := signIn(t, s, "alice", "alice-password-1"), signIn(t, s, "alice", "alice-password-1")
		bob := signIn(t, s, "bob", "bob-password-12")
		sess, err := s.Session(ctx, one)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SignOut(ctx, sess, "198.51.100.7"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Session(ctx, one); !errors.Is(err, staff.ErrNoSession) {
			t.Errorf("signed-out session: %v", err)
		}
		if _, err := s.Session(ctx, two); err != nil {
			t.Errorf("signing out one session ended another: %v", err)
		}

		// A role change applies to the very next request.
		if err := s.SetRole(ctx, admin, "alice", staff.Viewer); err != nil {
			t.Fatal(err)
		}
		if sess, _ := s.Session(ctx, two); sess.Account.Role != staff.Viewer {
			t.Errorf("role after the change: %s", sess.Account.Role)
		}

		// Disabling ends every session of the account at once, and only its.
		if err := s.Disable(ctx, admin, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Session(ctx, two); !errors.Is(err, staff.ErrNoSession) {
			t.Errorf("a disabled account's session: %v", err)
		}
		if _, err := s.Session(ctx, bob); err != nil {
			t.Errorf("another account's session: %v", err)
		}
		if _, _, err := s.SignIn(ctx, staff.SignInRequest{Username: "alice", Password: "alice-password-1"}); !errors.Is(err, staff.ErrBadCredentials) {
			t.Errorf("a disabled account signed in: %v", err)
		}

		// Nobody disables themselves or changes their own role.
		for name, err := range map[string]error{
			"disable self": s.Disable(ctx, staff.Actor{Username: "bob"}, "bob"),
			"demote self":  s.SetRole(ctx, staff.Actor{Username: "bob"}, "bob", staff.Admin),
			"unknown":      s.Disable(ctx, admin, "nobody"),
		} {
			if err == nil {
				t.Errorf("%s: allowed", name)
			}
		}

		var got []string
		for _, e := range entries(t, s, staff.AuditFilter{}) {
			if e.Action != staff.ActSignIn && e.Action != staff.ActStaffAdd {
				got = append(got, string(e.Action)+" "+e.Actor+" "+e.Target+" "+e.Outcome+" "+e.Detail)
			}
		}
		want := []string{
			"staff.disable root alice ok 1 session(s) ended",
			"staff.role root alice ok from operator to viewer",
			"sign-out alice alice ok ",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		temp, err := s.Add(ctx, admin, "carol", staff.Operator, "")
		if err != nil || len(temp) < 20 {
			t.Fatalf("temporary password %q, %v", temp, err)
		}
		here, elsewhere := signIn(t, s, "carol", temp), signIn(t, s, "carol", temp)
		sess, err := s.Session(ctx, here)
		if err != nil || !sess.Account.MustChangePassword {
			t.Fatalf("a temporary password's session must ask for a change: %+v %v", sess, err)
		}
		for name, tt := range map[string]struct{ current, next string }{
			"too short":     {temp, "short"},
			"the username":  {temp, "CAROL"},
			"the same":      {temp, temp},
			"wrong current": {"not-it-at-all", "a-new-long-password"},
		} {
			if err := s.ChangePassword(ctx, sess, "198.51.100.7", tt.current, tt.next); err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if err := s.ChangePassword(ctx, sess, "198.51.100.7", temp, "a-new-long-password"); err != nil {
			t.Fatal(err)
		}
		if sess, err := s.Session(ctx, here); err != nil || sess.Account.MustChangePassword {
			t.Errorf("after the change, this session: %+v %v", sess, err)
		}
		if _, err := s.Session(ctx, elsewhere); !errors.Is(err, staff.ErrNoSession) {
			t.Errorf("after the change, the other session: %v", err)
		}
		signIn(t, s, "carol", "a-new-long-password")

		var got []string
		for _, e := range entries(t, s, staff.AuditFilter{Action: staff.ActPasswordChange}) {
			got = append(got, e.Outcome+" "+e.Detail)
		}
		if strings.Join(got, ",") != "ok 1 other session(s) ended,failed wrong current password" {
			t.Errorf("password entries %q", got)
		}
	})
}

func TestPasswordHashes(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	// An account hashed with older (here: cheaper) parameters is rehashed
	// with the current ones at its next sign-in.
	old := newStore(t, db, nil)
	mustAdd(t, old, "alice", staff.Viewer, "alice-password-1")
	stronger := staff.New(db.Gorm, staff.Config{Hash: staff.HashParams{Memory: 128, Time: 2, Threads: 1}})
	if _, _, err := stronger.SignIn(ctx, staff.SignInRequest{Username: "alice", Password: "alice-password-1"}); err != nil {
		t.Fatal(err)
	}
	var row models.StaffAccount
	db.Gorm.First(&row, "username = ?", "alice")
	if !strings.HasPrefix(row.PasswordHash, "$argon2id$v=19$m=128,t=2,p=1$") || strings.Contains(row.PasswordHash, "alice-password-1") {
		t.Errorf("hash after sign-in: %s", row.PasswordHash)
	}
	if _, err := stronger.Verify(ctx, "alice", "alice-password-1"); err != nil {
		t.Error(err)
	}
	// The default parameters are OWASP's baseline.
	if staff.DefaultHashParams.Memory < 19*1024 || staff.DefaultHashParams.Time < 2 {
		t.Errorf("default argon2id parameters %+v below 19 MiB, 2 passes", staff.DefaultHashParams)
	}
}
