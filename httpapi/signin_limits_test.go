package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// formSignIn posts the admin's sign-in form from addr.
func formSignIn(h http.Handler, addr, username, password string) *httptest.ResponseRecorder {
	form := url.Values{"username": {username}, "password": {password}}
	req := httptest.NewRequest("POST", "/admin/login", strings.NewReader(form.Encode()))
	req.RemoteAddr = addr + ":4243"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Once an address has spent its failures for an account, its sign-ins to
// that account are refused without the password being checked: the right
// password gets 429 too, so guessing stops. The same account from another
// address, and another account from the same address, still sign in. The
// first refusal is audited, the others are not.
func TestSignInLimitStopsGuessing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db, func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 3 })
		ctx := context.Background()
		if _, err := b.staff.Add(ctx, staff.CommandLine, "carol", staff.Viewer, "carol-password-1"); err != nil {
			t.Fatal(err)
		}
		const guesser = "203.0.113.7"
		for i := range 3 {
			if rec := formSignIn(b.handler, guesser, "admin", fmt.Sprint("guess-", i)); rec.Code != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d, want 401", i+1, rec.Code)
			}
		}
		for _, password := range []string{"guess-3", adminPassword, "guess-4"} {
			rec := formSignIn(b.handler, guesser, "ADMIN", password)
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || rec.Header().Get("Set-Cookie") != "" {
				t.Errorf("%q from the guessing address after its failures: %d, want 429 with Retry-After and no session", password, rec.Code)
			}
		}
		if rec := formSignIn(b.handler, "198.51.100.1", "admin", adminPassword); rec.Code != http.StatusSeeOther {
			t.Errorf("the right password from another address: %d, want 303 (never locked out by a guesser)", rec.Code)
		}
		if rec := formSignIn(b.handler, guesser, "carol", "carol-password-1"); rec.Code != http.StatusSeeOther {
			t.Errorf("another account from the guessing address: %d, want 303", rec.Code)
		}

		entries, err := b.staff.AuditLog(ctx, staff.AuditFilter{Action: staff.ActSignIn}, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		var failed, refused int
		for _, e := range entries.Entries {
			switch {
			case e.Outcome == staff.OutcomeFailed && e.Address == guesser:
				failed++
			case e.Outcome == staff.OutcomeRefused:
				refused++
				if e.Address != guesser || e.Target != "admin" || !strings.Contains(e.Detail, "429") {
					t.Errorf("refusal audited as %+v", e)
				}
			}
		}
		if failed != 3 || refused != 1 {
			t.Errorf("%d failures and %d refusals audited; want 3 and 1 (the first refusal of the lockout)", failed, refused)
		}
	})
}

// Failures with usernames that are no account's are audited up to the
// address's budget, then only counted: a guesser trying names cannot fill
// the audit log.
func TestAnonymousSignInFailuresAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db, func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 3 })
		for i := range 10 {
			if rec := formSignIn(b.handler, "203.0.113.7", fmt.Sprint("nobody-", i), "guess"); rec.Code != http.StatusUnauthorized {
				t.Fatalf("unknown username %d: %d, want 401", i, rec.Code)
			}
		}
		entries, err := b.staff.AuditLog(context.Background(), staff.AuditFilter{Action: staff.ActSignIn}, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(entries.Entries); n != 3 {
			t.Errorf("%d entries for 10 failures with unknown usernames from one address; want 3", n)
		}
	})
}

// A flood of bogus sign-ins (256 at once, real argon2id, a quarter of them
// HTTP Basic on /metrics) does not keep a staff member from signing in:
// tries over an address's budget or its share of the hashing
// (auth.MaxConcurrentPerAddress checks under way) are refused before any
// hashing, so the staff member's check waits behind at most that many of
// the flood's hashes. What is asserted is the answer, not how long it
// took, which follows the CPU's load.
func TestSignInFloodDoesNotBlockStaff(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	b := setup(t, db, func(d *httpapi.Deps) {
		d.Staff = staff.New(db.Gorm, staff.Config{}) // OWASP's argon2id, as in production
		if _, err := d.Staff.Bootstrap(context.Background(), "admin", adminPassword); err != nil {
			t.Fatal(err)
		}
	})
	var flood sync.WaitGroup
	start := make(chan struct{})
	codes := make(chan int, 256)
	for i := range 256 {
		flood.Go(func() {
			<-start
			if i%4 == 0 { // HTTP Basic on /metrics checks staff passwords too
				codes <- signIn(b.handler, "/metrics", "203.0.113.66", "Basic "+basic(fmt.Sprint("user-", i%8), "bogus")).Code
				return
			}
			codes <- formSignIn(b.handler, "203.0.113.66", fmt.Sprint("user-", i%8), "bogus").Code
		})
	}
	close(start)
	// The staff member comes once the flood is under way: a few of its
	// tries have been answered, the others are being checked or waiting.
	byCode := map[int]int{}
	for range 8 {
		byCode[<-codes]++
	}
	began := time.Now()
	rec := formSignIn(b.handler, "198.51.100.20", "admin", adminPassword)
	took := time.Since(began)
	flood.Wait()
	close(codes)
	if rec.Code != http.StatusSeeOther {
		t.Errorf("a real sign-in during a flood of 256 bogus ones: %d (Retry-After %q); want 303",
			rec.Code, rec.Header().Get("Retry-After"))
	}
	for c := range codes {
		byCode[c]++
	}
	if byCode[http.StatusTooManyRequests] == 0 || byCode[http.StatusSeeOther] != 0 || byCode[http.StatusOK] != 0 || byCode[http.StatusInternalServerError] != 0 {
		t.Errorf("the flood was answered %v; want most refused with 429 before hashing", byCode)
	}
	t.Logf("real sign-in took %v; the flood was answered %v", took, byCode)
}

// What others typed shows escaped in the audit log: a username tried at
// sign-in with a bidi override or a line break cannot pass for another
// entry.
func TestAuditShowsControlCharactersEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	formSignIn(b.handler, "203.0.113.7", "mallory\u202Enimda\nok", "guess")
	_, doc := b.asAdmin(t).get(t, "/admin/audit?action=sign-in")
	text := doc.Find("table").Text()
	if strings.ContainsAny(text, "\u202E") || !strings.Contains(text, `mallory\u202Enimda\u000Aok`) {
		t.Errorf("the audit page shows the typed username as %q; want its control characters escaped", text)
	}
}

// HTTP Basic on /metrics has the sign-in form's budget for usernames that
// are no account's: failures with made-up names are audited up to the
// address's budget, then only counted.
func TestAnonymousBasicFailuresAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db, func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 3 })
		codes := map[int]int{}
		for i := range 10 {
			codes[signIn(b.handler, "/metrics", "203.0.113.7", "Basic "+basic(fmt.Sprint("nobody-", i), "guess")).Code]++
		}
		if codes[http.StatusOK] != 0 || codes[http.StatusInternalServerError] != 0 {
			t.Errorf("answers %v; want 401s and 429s", codes)
		}
		entries, err := b.staff.AuditLog(context.Background(), staff.AuditFilter{Action: staff.ActSignIn}, 500, "")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(entries.Entries); n != 3 {
			t.Errorf("%d entries for 10 HTTP Basic failures with unknown usernames from one address; want 3, as the form", n)
		}
	})
}

// An HTTP Basic failure answered 429 (its address has spent its failures)
// is counted, not audited; the right password still reads /metrics from
// that address.
func TestLimitedBasicFailuresAreNotAudited(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.AuthFailuresPerMinute = 3 })
	const addr = "203.0.113.9"
	for i := range 3 {
		signIn(b.handler, "/graphql", addr, fmt.Sprint("Bearer guess-", i))
	}
	for i := range 2 {
		if rec := signIn(b.handler, "/metrics", addr, "Basic "+basic("admin", fmt.Sprint("wrong-", i))); rec.Code != http.StatusTooManyRequests {
			t.Errorf("a wrong admin password from a limited address: %d, want 429", rec.Code)
		}
	}
	if rec := signIn(b.handler, "/metrics", addr, "Basic "+basic("admin", adminPassword)); rec.Code != http.StatusOK {
		t.Errorf("the right admin password from a limited address: %d, want 200", rec.Code)
	}
	entries, err := b.staff.AuditLog(context.Background(), staff.AuditFilter{Action: staff.ActSignIn}, 500, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(entries.Entries); n != 0 {
		t.Errorf("%d sign-in entries for HTTP Basic failures answered 429; want none", n)
	}
}
