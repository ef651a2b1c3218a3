package staff

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
	"github.com/cmpay/cmpay/models"
)

// The store's suite: every test runs each method of the interface on
// both databases, through newStore, as the Store does; and the properties
// the database enforces (the audit log's triggers, the row lock that
// makes a sign-in and a disable take turns, the unique username) with
// Stores racing each other.

func openStore(t *testing.T, db dbtest.DB) store {
	t.Helper()
	st, err := newStore(db.Gorm)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// cheapHash keeps argon2id fast in tests: same format and code, less work.
var cheapHash = HashParams{Memory: 64, Time: 1, Threads: 1}

func openStaff(t *testing.T, db dbtest.DB) *Store {
	t.Helper()
	s := New(db.Gorm, Config{Hash: cheapHash})
	t.Cleanup(s.Close)
	return s
}

func at0() time.Time { return time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC) }

// mustAccount adds an account through st and reads it back.
func mustAccount(t *testing.T, st store, username string, role Role) models.StaffAccount {
	t.Helper()
	ctx := t.Context()
	if ok, err := st.addAccount(ctx, models.StaffAccount{Username: username, Role: string(role), PasswordHash: "hash-" + username,
		CreatedAt: at0()}); !ok || err != nil {
		t.Fatalf("add %s: %v, %v", username, ok, err)
	}
	a, ok, err := st.account(ctx, username)
	if !ok || err != nil {
		t.Fatalf("read %s: %v, %v", username, ok, err)
	}
	return a
}

// TestStoreAccounts: accounts are added once per username (a taken one
// leaves the transaction usable), read, listed, and changed: role,
// password (set, changed only from the hash read, rehashed), disabled,
// and signed in only while enabled.
func TestStoreAccounts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		bob := mustAccount(t, st, "bob", Viewer)
		alice := mustAccount(t, st, "alice", Operator)
		if bob.Username != "bob" || bob.Role != "viewer" || bob.PasswordHash != "hash-bob" || bob.MustChangePassword ||
			bob.Disabled || !bob.CreatedAt.Equal(at0()) || bob.LastSignInAt != nil || bob.ID == alice.ID {
			t.Errorf("bob read back as %+v", bob)
		}
		if _, ok, err := st.account(ctx, "nobody"); ok || err != nil {
			t.Errorf("an unknown account = %v, %v; want not found", ok, err)
		}

		// A taken username is no error, and on PostgreSQL leaves the
		// transaction usable, where a unique violation would abort it.
		err := st.tx(ctx, func(q queries) error {
			if ok, err := q.addAccount(ctx, models.StaffAccount{Username: "bob", Role: "admin", PasswordHash: "x", CreatedAt: at0()}); ok || err != nil {
				t.Errorf("adding a taken username = %v, %v; want false", ok, err)
			}
			return q.setRole(ctx, bob.ID, Operator, at0().Add(time.Minute))
		})
		if err != nil {
			t.Fatalf("the transaction after a taken username: %v", err)
		}
		list, err := st.accounts(ctx)
		if err != nil || len(list) != 2 || list[0].Username != "alice" || list[1].Username != "bob" || list[1].Role != "operator" ||
			list[1].PasswordHash != "hash-bob" {
			t.Fatalf("accounts = %+v, %v", list, err)
		}

		later := at0().Add(time.Hour)
		if err := st.setPassword(ctx, bob.ID, "set", later); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.changePassword(ctx, bob.ID, "hash-bob", "changed", later); ok || err != nil {
			t.Errorf("a change from a hash no longer the account's = %v, %v; want false", ok, err)
		}
		if ok, err := st.changePassword(ctx, bob.ID, "set", "changed", later); !ok || err != nil {
			t.Errorf("a change from the account's hash = %v, %v; want true", ok, err)
		}
		if err := st.rehashPassword(ctx, bob.ID, "set", "not written"); err != nil {
			t.Fatal(err)
		}
		if err := st.rehashPassword(ctx, alice.ID, "hash-alice", "rehashed"); err != nil {
			t.Fatal(err)
		}
		var rows []models.StaffAccount
		db.Gorm.Order("username").Find(&rows)
		if len(rows) != 2 || rows[0].PasswordHash != "rehashed" || !rows[0].PasswordChangedAt.Equal(at0()) ||
			rows[1].PasswordHash != "changed" || !rows[1].PasswordChangedAt.Equal(later) || !rows[1].UpdatedAt.Equal(later) {
			t.Errorf("after the password changes: %+v", rows)
		}
		// A temporary password is cleared by any of the password's sets.
		db.Gorm.Model(&models.StaffAccount{}).Where("id = ?", bob.ID).Update("must_change_password", true)
		if ok, err := st.changePassword(ctx, bob.ID, "changed", "again", later); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if a, _, _ := st.account(ctx, "bob"); a.MustChangePassword {
			t.Error("a changed password is still to be changed")
		}

		if ok, err := st.markSignIn(ctx, bob.ID, later); !ok || err != nil {
			t.Errorf("markSignIn of an enabled account = %v, %v; want true", ok, err)
		}
		if err := st.disable(ctx, bob.ID, later.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if ok, err := st.markSignIn(ctx, bob.ID, later.Add(time.Hour)); ok || err != nil {
			t.Errorf("markSignIn of a disabled account = %v, %v; want false", ok, err)
		}
		a, _, _ := st.account(ctx, "bob")
		if !a.Disabled || a.LastSignInAt == nil || !a.LastSignInAt.Equal(later) {
			t.Errorf("bob after a sign-in and a disable: %+v", a)
		}
	})
}

// TestStoreSessions: sessions are started, read with their account as it
// is now, touched (only over a use older than stale), ended one at a time,
// all of an account's but one, or when they have expired or idled.
func TestStoreSessions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		bob, alice := mustAccount(t, st, "bob", Viewer), mustAccount(t, st, "alice", Admin)
		start := func(id string, acct int64, created time.Time) {
			t.Helper()
			if err := st.startSession(ctx, models.StaffSession{ID: id, AccountID: acct, CreatedAt: created,
				ExpiresAt: created.Add(12 * time.Hour), Address: "192.0.2.1"}); err != nil {
				t.Fatal(err)
			}
		}
		start("b1", bob.ID, at0())
		start("b2", bob.ID, at0().Add(time.Hour))
		start("b3", bob.ID, at0().Add(2*time.Hour))
		start("a1", alice.ID, at0())
		if err := st.startSession(ctx, models.StaffSession{ID: "b1", AccountID: bob.ID, CreatedAt: at0(), ExpiresAt: at0()}); err == nil {
			t.Error("a second session with the same id was stored")
		}

		r, ok, err := st.session(ctx, "b2")
		want := sessionRow{accountID: bob.ID, createdAt: at0().Add(time.Hour), lastUsedAt: at0().Add(time.Hour),
			expiresAt: at0().Add(13 * time.Hour), username: "bob", role: "viewer", accountCreatedAt: at0()}
		if !ok || err != nil || !sameSession(r, want) {
			t.Errorf("session b2 = %+v, %v, %v\nwant %+v", r, ok, err, want)
		}
		if _, ok, err := st.session(ctx, "nope"); ok || err != nil {
			t.Errorf("an unknown session = %v, %v; want not found", ok, err)
		}
		if err := st.touchSession(ctx, "b2", at0().Add(90*time.Minute), at0().Add(89*time.Minute)); err != nil {
			t.Fatal(err)
		}
		// A use recorded after stale stays: a write that lands late moves
		// nothing back, and one within a minute of another writes nothing.
		for _, late := range []time.Time{at0().Add(80 * time.Minute), at0().Add(90*time.Minute + 30*time.Second)} {
			if err := st.touchSession(ctx, "b2", late, late.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		// The account as it is now: a disabled account's session says so.
		if err := st.disable(ctx, bob.ID, at0()); err != nil {
			t.Fatal(err)
		}
		r, _, _ = st.session(ctx, "b2")
		want.lastUsedAt, want.disabled = at0().Add(90*time.Minute), true
		if !sameSession(r, want) {
			t.Errorf("session b2 after a touch and a disable = %+v\nwant %+v", r, want)
		}

		if err := st.endSession(ctx, "b3"); err != nil {
			t.Fatal(err)
		}
		if n, err := st.endSessions(ctx, bob.ID, "b2"); n != 1 || err != nil {
			t.Errorf("ending bob's sessions but b2 = %d, %v; want 1 (b1)", n, err)
		}
		if got := sessionIDs(t, db); got != "a1 b2" {
			t.Errorf("sessions left: %s", got)
		}
		// Ended: expired by the first time, or last used by the second.
		start("a2", alice.ID, at0().Add(3*time.Hour))
		if err := st.deleteEndedSessions(ctx, at0().Add(12*time.Hour), at0().Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got := sessionIDs(t, db); got != "a2" {
			t.Errorf("after deleting the ended sessions: %s; want a2 (a1 expired, b2 idle)", got)
		}
		if n, err := st.endSessions(ctx, alice.ID, ""); n != 1 || err != nil {
			t.Errorf("ending all of alice's sessions = %d, %v; want 1", n, err)
		}
	})
}

func sameSession(a, b sessionRow) bool {
	return a.accountID == b.accountID && a.createdAt.Equal(b.createdAt) && a.lastUsedAt.Equal(b.lastUsedAt) &&
		a.expiresAt.Equal(b.expiresAt) && a.username == b.username && a.role == b.role &&
		a.mustChangePassword == b.mustChangePassword && a.disabled == b.disabled && a.accountCreatedAt.Equal(b.accountCreatedAt)
}

func sessionIDs(t *testing.T, db dbtest.DB) string {
	t.Helper()
	var ids []string
	if err := db.Gorm.Model(&models.StaffSession{}).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return strings.Join(ids, " ")
}

// TestStoreTransactions: a transaction commits what f wrote when f
// returns nil and nothing otherwise; in writes in another package's
// transaction, committed or rolled back with it.
func TestStoreTransactions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		entry := func(target string) models.StaffAuditEntry {
			return storedEntry(at0(), Actor{Username: "root"}, ActStaffView, target, OutcomeOK, "")
		}
		boom := errors.New("boom")
		if err := st.tx(ctx, func(q queries) error { return q.appendEntry(ctx, entry("rolled back")) }); err != nil {
			t.Fatal(err)
		}
		if err := st.tx(ctx, func(q queries) error {
			if err := q.appendEntry(ctx, entry("not kept")); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("tx = %v, want f's error", err)
		}

		// Another package's transaction: a runner of its own over the pool.
		other, err := sqlq.Pick(db.Gorm, func(p *sqlq.PG) sqlq.DB { return p }, func(l *sqlq.Lite) sqlq.DB { return l })
		if err != nil {
			t.Fatal(err)
		}
		for _, fail := range []bool{true, false} {
			err := other.Tx(ctx, func(tx sqlq.Runner) error {
				if err := st.in(tx).appendEntry(ctx, entry(fmt.Sprint("in, failed: ", fail))); err != nil || !fail {
					return err
				}
				return boom
			})
			if fail != errors.Is(err, boom) {
				t.Fatalf("other transaction: %v", err)
			}
		}
		var targets []string
		db.Gorm.Model(&models.StaffAuditEntry{}).Order("id").Pluck("target", &targets)
		if got := strings.Join(targets, ","); got != "rolled back,in, failed: false" {
			t.Errorf("entries kept: %s", got)
		}
	})
}

// TestStoreAuditReads: each side of the log reads newest first in (at, id)
// order, between its bounds, limited, and filtered by staff member and
// action; the payments' side holds only the admin's attempts. The
// currencies of the payments named are read in one go.
func TestStoreAuditReads(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		// Two entries an instant: the id breaks the tie.
		for i := range 8 {
			who := []string{"alice", "bob"}[i%2]
			action := []Action{ActSignIn, ActExport, ActSignIn, ActSignOut}[i%4]
			e := storedEntry(at0().Add(time.Duration(i/2)*time.Minute), Actor{Username: who}, action, fmt.Sprint("e", i), OutcomeOK, "")
			if err := st.appendEntry(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		params := `{"amount":"1"}`
		for i, a := range []models.IdempotencyAttempt{
			{PaymentID: "pay_1", Operation: "REFUND_PAYMENT", Transport: "admin", Actor: "alice", Params: &params},
			{PaymentID: "pay_1", Operation: "CAPTURE_PAYMENT", Transport: "admin", Actor: "bob", Refusal: "PAYMENT_STATE_CONFLICT"},
			{PaymentID: "pay_2", Operation: "REFUND_PAYMENT", Transport: "rest"},
			{PaymentID: "pay_2", Operation: "REFUND_PAYMENT", Transport: "admin", Actor: "bob", ActorAddress: "192.0.2.7"},
		} {
			a.Outcome, a.At = "APPLIED", at0().Add(time.Duration(i)*time.Minute)
			if err := db.Gorm.Create(&a).Error; err != nil {
				t.Fatal(err)
			}
		}
		everything := auditRead{before: position{at: endOfTime, id: math.MaxInt64}, limit: 100}
		targets := func(rows []auditRow, err error) string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, r.Target)
			}
			return strings.Join(out, " ")
		}
		reads := []struct {
			name string
			r    func(auditRead) auditRead
			want string
		}{
			{"all", func(r auditRead) auditRead { return r }, "e7 e6 e5 e4 e3 e2 e1 e0"},
			{"limited", func(r auditRead) auditRead { r.limit = 3; return r }, "e7 e6 e5"},
			{"by actor", func(r auditRead) auditRead { r.actor = "bob"; return r }, "e7 e5 e3 e1"},
			{"by actor and action", func(r auditRead) auditRead { r.actor, r.action = "alice", string(ActSignIn); return r }, "e6 e4 e2 e0"},
			{"by action", func(r auditRead) auditRead { r.action = string(ActExport); return r }, "e5 e1"},
			{"from", func(r auditRead) auditRead { r.from = at0().Add(2 * time.Minute); return r }, "e7 e6 e5 e4"},
			{"before an instant", func(r auditRead) auditRead {
				r.before = position{at: at0().Add(2 * time.Minute), id: math.MinInt64}
				return r
			}, "e3 e2 e1 e0"},
		}
		for _, tt := range reads {
			if got := targets(st.auditEntries(ctx, tt.r(everything))); got != tt.want {
				t.Errorf("auditEntries %s = %s, want %s", tt.name, got, tt.want)
			}
		}
		// Before an entry: after it in the log, the ones of its instant
		// with a lower id included.
		all, _ := st.auditEntries(ctx, everything)
		r := everything
		r.before = position{at: all[2].At, id: all[2].ID}
		if got := targets(st.auditEntries(ctx, r)); got != "e4 e3 e2 e1 e0" {
			t.Errorf("auditEntries before e5 = %s", got)
		}
		if all[0].Src != srcStaff || all[0].Actor != "bob" || all[0].Action != string(ActSignOut) || all[0].Outcome != OutcomeOK ||
			!all[0].At.Equal(at0().Add(3*time.Minute)) {
			t.Errorf("the newest entry read back as %+v", all[0])
		}

		attempts := []struct {
			name string
			r    func(auditRead) auditRead
			want string
		}{
			{"all", func(r auditRead) auditRead { return r }, "pay_2 pay_1 pay_1"},
			{"of an operation", func(r auditRead) auditRead { r.action = "REFUND_PAYMENT"; return r }, "pay_2 pay_1"},
			{"by actor", func(r auditRead) auditRead { r.actor = "bob"; return r }, "pay_2 pay_1"},
			{"by actor and operation", func(r auditRead) auditRead { r.actor, r.action = "bob", "CAPTURE_PAYMENT"; return r }, "pay_1"},
			{"limited", func(r auditRead) auditRead { r.limit = 1; return r }, "pay_2"},
			{"from", func(r auditRead) auditRead { r.from = at0().Add(time.Minute); return r }, "pay_2 pay_1"},
		}
		for _, tt := range attempts {
			if got := targets(st.adminAttempts(ctx, tt.r(everything))); got != tt.want {
				t.Errorf("adminAttempts %s = %s, want %s", tt.name, got, tt.want)
			}
		}
		rows, _ := st.adminAttempts(ctx, everything)
		if got := fmt.Sprintf("%s|%s|%s|%s|%s|%q|%v", rows[0].Src, rows[0].Actor, rows[0].Address, rows[0].Action, rows[0].Outcome,
			rows[0].Params, rows[0].At.Equal(at0().Add(3*time.Minute))); got != `p|bob|192.0.2.7|REFUND_PAYMENT|APPLIED|""|true` {
			t.Errorf("the newest attempt read back as %s", got)
		}
		if rows[1].Detail != "PAYMENT_STATE_CONFLICT" || rows[2].Params != params {
			t.Errorf("older attempts read back as %+v", rows[1:])
		}

		for _, p := range []models.Payment{{ID: "pay_1", Currency: "BRL"}, {ID: "pay_2", Currency: "JPY"}} {
			p.ClientID, p.IdempotencyKey, p.AmountMinor, p.Method, p.CreatedAt = "c", p.ID, 100, "PIX", at0()
			if err := db.Gorm.Create(&p).Error; err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.currencies(ctx, []string{"pay_2", "pay_1", "pay_missing"})
		if err != nil || fmt.Sprint(got) != "map[pay_1:BRL pay_2:JPY]" {
			t.Errorf("currencies = %v, %v", got, err)
		}
	})
}

// TestAuditIsAppendOnly: the database itself refuses to change or delete
// an entry, whoever asks.
func TestAuditIsAppendOnly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		for _, who := range []string{"root", "alice"} {
			if err := st.appendEntry(ctx, storedEntry(at0(), Actor{Username: who}, ActSignIn, who, OutcomeOK, "")); err != nil {
				t.Fatal(err)
			}
		}
		if err := database.Migrate(db.Gorm); err != nil { // twice is fine
			t.Fatal(err)
		}
		for _, stmt := range []string{
			`UPDATE staff_audit SET outcome = 'failed'`,
			`DELETE FROM staff_audit WHERE actor = 'root'`,
			`DELETE FROM staff_audit`,
		} {
			if err := db.Gorm.Exec(stmt).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v", stmt, err)
			}
		}
		// PostgreSQL's TRUNCATE skips row triggers, so a statement trigger
		// refuses it; SQLite has no TRUNCATE (a syntax error).
		if err := db.Gorm.Exec(`TRUNCATE staff_audit`).Error; err == nil {
			t.Error("TRUNCATE allowed")
		}
		rows, err := st.auditEntries(ctx, auditRead{before: position{at: endOfTime, id: math.MaxInt64}, limit: 10})
		if err != nil || len(rows) != 2 || rows[0].Outcome != OutcomeOK || rows[1].Outcome != OutcomeOK {
			t.Errorf("entries left: %+v, %v; want both as written", rows, err)
		}
	})
}

// TestAdminAttemptsAreAppendOnly: the staff's captures, cancels and
// refunds, recorded as payment attempts with transport admin, are part of
// the audit log and as append-only as staff_audit; API clients' attempts
// are not.
func TestAdminAttemptsAreAppendOnly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, a := range []models.IdempotencyAttempt{
			{PaymentID: "pay_1", Operation: "REFUND_PAYMENT", Outcome: "APPLIED", At: at0(), Transport: "admin", Actor: "alice"},
			{PaymentID: "pay_1", Operation: "CREATE_PAYMENT", Outcome: "CREATED", At: at0(), Transport: "graphql"},
		} {
			if err := db.Gorm.Create(&a).Error; err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range []string{
			`UPDATE idempotency_attempts SET actor = 'mallory' WHERE transport = 'admin'`,
			`DELETE FROM idempotency_attempts WHERE transport = 'admin'`,
			`DELETE FROM idempotency_attempts`,
		} {
			if err := db.Gorm.Exec(stmt).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v; want refused", stmt, err)
			}
		}
		if db.Dialect == "postgres" {
			if err := db.Gorm.Exec(`TRUNCATE idempotency_attempts`).Error; err == nil {
				t.Error("TRUNCATE allowed while it holds staff actions")
			}
		}
		if err := db.Gorm.Exec(`UPDATE idempotency_attempts SET outcome = 'REPLAYED' WHERE transport = 'graphql'`).Error; err != nil {
			t.Errorf("an API attempt: %v; the triggers are for staff actions only", err)
		}
		var actors []string
		db.Gorm.Table("idempotency_attempts").Where("transport = 'admin'").Pluck("actor", &actors)
		if len(actors) != 1 || actors[0] != "alice" {
			t.Errorf("staff actions left: %v; want alice's, as written", actors)
		}
	})
}

// TestDisableRacesSignIns: sign-ins made while the account is disabled
// either commit first, and the disable ends their sessions, or see it
// disabled and roll back: none leaves a session. Every sign-in made at
// once before it gets a session of its own.
func TestDisableRacesSignIns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, ctx := openStaff(t, db), t.Context()
		const rounds, signIns = 5, 8
		for round := range rounds {
			user := fmt.Sprintf("user-%d", round)
			if _, err := s.Add(ctx, CommandLine, user, Viewer, "a-long-password"); err != nil {
				t.Fatal(err)
			}
			// At once before the disable: each gets its own session.
			tokens := make(chan string, signIns)
			var wg sync.WaitGroup
			for range signIns {
				wg.Go(func() {
					token, _, err := s.SignIn(ctx, SignInRequest{Username: user, Password: "a-long-password"})
					if err != nil {
						t.Errorf("sign-in: %v", err)
					}
					tokens <- token
				})
			}
			wg.Wait()
			close(tokens)
			seen := map[string]bool{}
			for token := range tokens {
				if _, err := s.Session(ctx, token); err != nil || seen[token] {
					t.Errorf("a sign-in's session: %v (seen before: %v)", err, seen[token])
				}
				seen[token] = true
			}

			// At once with the disable.
			for range signIns {
				wg.Go(func() {
					_, _, err := s.SignIn(ctx, SignInRequest{Username: user, Password: "a-long-password"})
					if err != nil && !errors.Is(err, ErrBadCredentials) {
						t.Errorf("sign-in: %v", err)
					}
				})
			}
			if err := s.Disable(ctx, CommandLine, user); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			acct, err := s.Get(ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			var left int64
			db.Gorm.Model(&models.StaffSession{}).Where("account_id = ?", acct.ID).Count(&left)
			if left != 0 {
				t.Errorf("round %d: %d session(s) of the disabled account left", round, left)
			}
		}
	})
}

// TestConcurrentBootstraps: instances starting at once on an empty
// database create one admin, print one password, and write one entry.
func TestConcurrentBootstraps(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := t.Context()
		openStaff(t, db)
		const instances = 6
		results := make(chan Bootstrapped, instances)
		var wg sync.WaitGroup
		for range instances {
			wg.Go(func() {
				// A costlier hash, made inside the transaction, keeps
				// the instances' transactions open at the same time.
				b, err := New(db.Gorm, Config{Hash: HashParams{Memory: 8 * 1024, Time: 2, Threads: 1}}).Bootstrap(ctx, "admin", "")
				if err != nil {
					t.Errorf("bootstrap: %v", err)
				}
				results <- b
			})
		}
		wg.Wait()
		close(results)
		var created, printed int
		for b := range results {
			if b.Created {
				created++
			}
			if b.Generated != "" {
				printed++
			}
		}
		var accounts, entries int64
		db.Gorm.Model(&models.StaffAccount{}).Count(&accounts)
		db.Gorm.Model(&models.StaffAuditEntry{}).Where("action = ?", string(ActStaffAdd)).Count(&entries)
		if created != 1 || printed != 1 || accounts != 1 || entries != 1 {
			t.Errorf("%d created, %d passwords printed, %d accounts, %d entries; want one each", created, printed, accounts, entries)
		}
	})
}

// TestConcurrentPasswordChanges: of changes made at once from the same
// current hash, one succeeds.
func TestConcurrentPasswordChanges(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		bob := mustAccount(t, st, "bob", Viewer)
		const changes = 6
		won := make(chan string, changes)
		var wg sync.WaitGroup
		for i := range changes {
			wg.Go(func() {
				next := fmt.Sprint("hash-", i)
				err := st.tx(ctx, func(q queries) error {
					ok, err := q.changePassword(ctx, bob.ID, bob.PasswordHash, next, at0())
					if ok {
						won <- next
					}
					return err
				})
				if err != nil {
					t.Errorf("change: %v", err)
				}
			})
		}
		wg.Wait()
		close(won)
		var winners []string
		for w := range won {
			winners = append(winners, w)
		}
		a, _, _ := st.account(ctx, "bob")
		if len(winners) != 1 || a.PasswordHash != winners[0] {
			t.Errorf("changes that succeeded: %v; the hash is %s", winners, a.PasswordHash)
		}
	})
}

// TestStatements: every statement loads and is run by the package.
func TestStatements(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t,
		sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/postgres.sql"),
		sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/sqlite.sql"))
}
