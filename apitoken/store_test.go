package apitoken

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
	"github.com/cmpay/cmpay/models"
)

// The store's suite: every test runs each method of the interface on
// both databases, through newStore, as the Store does; and what the
// database enforces (one token per hash, one revocation, one write of a
// use) with callers racing each other.

func openStore(t *testing.T, db dbtest.DB) store {
	t.Helper()
	st, err := newStore(db.Gorm)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var t0 = time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)

func tokenRow(id string, created time.Time) models.APIToken {
	return models.APIToken{ID: id, Name: "name " + id, ClientID: "client-" + id, Scopes: "payments:read,payments:write",
		TokenHash: "hash-" + id, CreatedAt: created}
}

// auditing records what an Audit was told, and fails with err.
type auditing struct {
	mu        sync.Mutex
	err       error
	told      []string
	unchanged []bool
}

func (a *auditing) audit(_ context.Context, _ sqlq.Runner, tok Token, unchanged bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.told, a.unchanged = append(a.told, tok.ID), append(a.unchanged, unchanged)
	return a.err
}

// TestStoreTokens: tokens are created with their audit (one whose audit
// fails is not kept), one per hash; listed oldest first; and read back
// by hash as they were stored.
func TestStoreTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		failing := &auditing{err: errors.New("audit log unavailable")}
		if err := st.create(ctx, tokenRow("tok_lost", t0), failing.audit); !errors.Is(err, failing.err) {
			t.Fatalf("create with a failing audit = %v, want its error", err)
		}
		a := &auditing{}
		for i, id := range []string{"tok_b", "tok_a", "tok_c"} {
			if err := st.create(ctx, tokenRow(id, t0.Add(time.Duration(i%2)*time.Minute)), a.audit); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.create(ctx, tokenRow("tok_d", t0), nil); err != nil {
			t.Fatal(err)
		}
		dup := tokenRow("tok_e", t0)
		dup.TokenHash = "hash-tok_a"
		if err := st.create(ctx, dup, nil); err == nil {
			t.Error("a second token with the same hash was stored")
		}
		if fmt.Sprint(a.told, a.unchanged) != "[tok_b tok_a tok_c] [false false false]" {
			t.Errorf("audits told %v %v", a.told, a.unchanged)
		}

		list, err := st.tokens(ctx)
		var ids []string
		for _, r := range list {
			ids = append(ids, r.ID)
		}
		if err != nil || fmt.Sprint(ids) != "[tok_b tok_c tok_d tok_a]" {
			t.Errorf("tokens = %v, %v; want oldest first, by id within an instant", ids, err)
		}

		row, ok, err := st.byHash(ctx, "hash-tok_c")
		if want := tokenRow("tok_c", t0); !ok || err != nil || row.ID != want.ID || row.Name != want.Name ||
			row.ClientID != want.ClientID || row.Scopes != want.Scopes || row.TokenHash != want.TokenHash ||
			!row.CreatedAt.Equal(t0) || row.LastUsedAt != nil || row.RevokedAt != nil {
			t.Errorf("byHash = %+v, %v, %v", row, ok, err)
		}
		if _, ok, err := st.byHash(ctx, "hash-tok_lost"); ok || err != nil {
			t.Errorf("byHash of a token whose audit failed = %v, %v; want none", ok, err)
		}
	})
}

// TestStoreRevoke: a revocation stamps the token once, tells its audit
// whether it changed anything, and is undone with an audit that fails;
// of two made at once, one changes the token.
func TestStoreRevoke(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		for _, id := range []string{"tok_1", "tok_2"} {
			if err := st.create(ctx, tokenRow(id, t0), nil); err != nil {
				t.Fatal(err)
			}
		}
		failing := &auditing{err: errors.New("audit log unavailable")}
		if _, _, err := st.revoke(ctx, "tok_1", t0, failing.audit); !errors.Is(err, failing.err) {
			t.Fatalf("revoke with a failing audit = %v, want its error", err)
		}
		if row, _, _ := st.byHash(ctx, "hash-tok_1"); row.RevokedAt != nil {
			t.Fatal("a revocation whose audit failed took effect")
		}

		a := &auditing{}
		row, ok, err := st.revoke(ctx, "tok_1", t0.Add(time.Minute), a.audit)
		if !ok || err != nil || row.RevokedAt == nil || !row.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("revoke = %+v, %v, %v", row, ok, err)
		}
		row, ok, err = st.revoke(ctx, "tok_1", t0.Add(time.Hour), a.audit)
		if !ok || err != nil || !row.RevokedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("revoking again = %+v, %v, %v; want the first revocation kept", row, ok, err)
		}
		if _, ok, err := st.revoke(ctx, "tok_nope", t0, a.audit); ok || err != nil {
			t.Errorf("revoking an unknown id = %v, %v; want not found", ok, err)
		}
		if fmt.Sprint(a.told, a.unchanged) != "[tok_1 tok_1] [false true]" {
			t.Errorf("audits told %v %v; want a change, then none, and nothing for an unknown id", a.told, a.unchanged)
		}

		race := &auditing{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, _, err := st.revoke(ctx, "tok_2", t0, race.audit); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		changed := 0
		for _, same := range race.unchanged {
			if !same {
				changed++
			}
		}
		if len(race.unchanged) != 4 || changed != 1 {
			t.Errorf("four revocations at once told %v; want one change", race.unchanged)
		}
	})
}

// TestStoreTouch: a use is written when none was after the stale time,
// and of several servers writing one at once, one does.
func TestStoreTouch(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, ctx := openStore(t, db), t.Context()
		if err := st.create(ctx, tokenRow("tok_1", t0), nil); err != nil {
			t.Fatal(err)
		}
		used := func() time.Time {
			row, _, err := st.byHash(ctx, "hash-tok_1")
			if err != nil || row.LastUsedAt == nil {
				t.Fatalf("last used %v, %v", row.LastUsedAt, err)
			}
			return *row.LastUsedAt
		}
		touch := func(at time.Time) int {
			var wrote sync.WaitGroup
			var mu sync.Mutex
			n := 0
			for range 4 {
				wrote.Go(func() {
					ok, err := st.touch(ctx, "tok_1", at, at.Add(-time.Minute))
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						n++
						mu.Unlock()
					}
				})
			}
			wrote.Wait()
			return n
		}
		if n := touch(t0); n != 1 || !used().Equal(t0) {
			t.Errorf("the first use: %d writes, last used %v; want one, at %s", n, used(), t0)
		}
		if n := touch(t0.Add(59 * time.Second)); n != 0 || !used().Equal(t0) {
			t.Errorf("a use within a minute: %d writes, last used %v; want none", n, used())
		}
		if n := touch(t0.Add(time.Minute)); n != 1 || !used().Equal(t0.Add(time.Minute)) {
			t.Errorf("a use a minute later: %d writes, last used %v; want one", n, used())
		}
	})
}

// TestStatements: every statement loads and is run by the package.
func TestStatements(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t, statements)
}
