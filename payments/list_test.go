package payments_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

func TestGetNotFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		if _, err := b.svc.Get(t.Context(), "pay_nope"); !errors.Is(err, payments.ErrNotFound) {
			t.Errorf("Get(unknown) = %v, want ErrNotFound", err)
		}
	})
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		a1 := b.mustCreate(t, request("a", "k1", "1", "BRL", payments.MethodPix)).Payment
		a2 := b.mustCreate(t, request("a", "k2", "2", "BRL", payments.MethodPix)).Payment
		b1 := b.mustCreate(t, request("b", "k1", "3", "BRL", payments.MethodPix)).Payment
		b2 := b.mustCreate(t, request("b", "k3", "4", "BRL", payments.MethodPix)).Payment
		b.mustCreate(t, request("a", "k2", "2", "BRL", payments.MethodPix))           // replay a2
		b.svc.Create(t.Context(), request("b", "k3", "5", "BRL", payments.MethodPix)) // reject on b2

		tests := []listing{
			{"all, newest first", payments.Filter{}, []payments.Payment{b2, b1, a2, a1}},
			{"client", payments.Filter{ClientID: "a"}, []payments.Payment{a2, a1}},
			{"key across clients", payments.Filter{IdempotencyKey: "k1"}, []payments.Payment{b1, a1}},
			{"client and key", payments.Filter{ClientID: "b", IdempotencyKey: "k1"}, []payments.Payment{b1}},
			{"flagged", payments.Filter{Flagged: true}, []payments.Payment{b2, a2}},
			{"flagged for a client", payments.Filter{Flagged: true, ClientID: "a"}, []payments.Payment{a2}},
			{"nothing", payments.Filter{ClientID: "nobody"}, nil},
		}
		checkListings(t, b.svc, tests)
	})
}

// Paging through while payments keep arriving never skips or repeats one.
func TestListPagination(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		var existing []string
		for i := range 23 {
			existing = append(existing, b.mustCreate(t, pix(fmt.Sprintf("k%02d", i))).Payment.ID)
		}

		seen := map[string]int{}
		after, pages := "", 0
		for {
			page, err := b.svc.List(t.Context(), payments.Filter{}, 5, after)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, p := range page.Payments {
				seen[p.ID]++
			}
			// New payments arrive between pages.
			b.mustCreate(t, pix(fmt.Sprintf("new%02d", pages)))
			if !page.HasNextPage {
				break
			}
			after = page.EndCursor()
		}
		if pages != 5 {
			t.Errorf("%d pages, want 5", pages)
		}
		for _, id := range existing {
			if seen[id] != 1 {
				t.Errorf("payment %s seen %d times, want once", id, seen[id])
			}
		}
		if len(seen) != len(existing) {
			t.Errorf("saw %d payments, want the %d that existed", len(seen), len(existing))
		}
	})
}

// TestListFirstZeroEnds: a page of no payments has no cursor to continue
// from, so it says none follows, even when payments match: a pager that
// loops while hasNextPage, passing endCursor on, stops instead of asking
// for the first page again forever. A bad cursor is still refused.
func TestListFirstZeroEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		b.mustCreate(t, pix("z1"))
		b.mustCreate(t, pix("z2"))
		start, err := b.svc.List(t.Context(), payments.Filter{}, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, after := range []string{"", start.EndCursor()} {
			page, err := b.svc.List(t.Context(), payments.Filter{}, 0, after)
			if err != nil || len(page.Payments) != 0 || page.HasNextPage || page.EndCursor() != "" {
				t.Errorf("List(first 0, after %q) = %d payments, hasNextPage %v, %v; want none, false", after, len(page.Payments), page.HasNextPage, err)
			}
		}
		if _, err := b.svc.List(t.Context(), payments.Filter{}, 0, "not-a-cursor"); !errors.Is(err, payments.ErrInvalidInput) {
			t.Errorf("List(first 0, a bad cursor) = %v, want ErrInvalidInput", err)
		}
	})
}

func TestListRefusesBadArguments(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, tt := range []struct {
			first int
			after string
		}{
			{-1, ""},
			{payments.MaxPageSize + 1, ""},
			{10, "not-a-cursor"},
			{10, "djI6MTox"}, // base64 of "v2:1:1"
		} {
			_, err := b.svc.List(t.Context(), payments.Filter{}, tt.first, tt.after)
			if !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("List(first %d, after %q) = %v, want ErrInvalidInput", tt.first, tt.after, err)
			}
		}
	})
}

// listing is a filter and the first page it must list, newest first.
type listing struct {
	name   string
	filter payments.Filter
	want   []payments.Payment
}

// checkListings lists the first page of each filter and compares ids.
func checkListings(t *testing.T, svc *payments.Service, tests []listing) {
	t.Helper()
	for _, tt := range tests {
		page, err := svc.List(t.Context(), tt.filter, 10, "")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got, want := ids(page.Payments), ids(tt.want); got != want {
			t.Errorf("%s: got %s, want %s", tt.name, got, want)
		}
	}
}

func ids(ps []payments.Payment) string {
	s := ""
	for _, p := range ps {
		s += p.ID + " "
	}
	return s
}

func TestListAdminFilters(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		plain := b.mustCreate(t, request("acme", "k1", "1", "BRL", payments.MethodPix)).Payment
		replayed := b.mustCreate(t, request("acme", "k2", "2", "BRL", payments.MethodPix)).Payment
		b.mustCreate(t, request("acme", "k2", "2", "BRL", payments.MethodPix))
		b.clock.Advance(2 * time.Hour)
		rejected := b.mustCreate(t, request("globex", "k3", "3", "BRL", payments.MethodPix)).Payment
		b.svc.Create(t.Context(), request("globex", "k3", "4", "BRL", payments.MethodPix))
		both := b.mustCreate(t, request("globex", "acme", "5", "BRL", payments.MethodPix)).Payment // key "acme"
		b.mustCreate(t, request("globex", "acme", "5", "BRL", payments.MethodPix))
		b.svc.Create(t.Context(), request("globex", "acme", "6", "BRL", payments.MethodPix))

		tests := []listing{
			{"replayed", payments.Filter{Replayed: true}, []payments.Payment{both, replayed}},
			{"rejected", payments.Filter{Rejected: true}, []payments.Payment{both, rejected}},
			{"replayed and rejected", payments.Filter{Replayed: true, Rejected: true}, []payments.Payment{both}},
			{"from", payments.Filter{From: rejected.CreatedAt}, []payments.Payment{both, rejected}},
			{"to", payments.Filter{To: rejected.CreatedAt}, []payments.Payment{replayed, plain}},
			{"range", payments.Filter{From: replayed.CreatedAt, To: both.CreatedAt}, []payments.Payment{rejected, replayed}},
			// "acme" is a client id and also a key: both kinds of match,
			// each payment once.
			{"search client or key", payments.Filter{Search: "acme"}, []payments.Payment{both, replayed, plain}},
			{"search key", payments.Filter{Search: "k3"}, []payments.Payment{rejected}},
			{"search id", payments.Filter{Search: replayed.ID}, []payments.Payment{replayed}},
			{"search id with a filter it fails", payments.Filter{Search: plain.ID, Flagged: true}, nil},
			{"search with a filter", payments.Filter{Search: "acme", Flagged: true}, []payments.Payment{both, replayed}},
			{"search nothing", payments.Filter{Search: "nobody"}, nil},
		}
		checkListings(t, b.svc, tests)

		// Searching pages like any listing.
		page, err := b.svc.List(t.Context(), payments.Filter{Search: "acme"}, 2, "")
		if err != nil || !page.HasNextPage || ids(page.Payments) != ids([]payments.Payment{both, replayed}) {
			t.Fatalf("search page 1: %v %+v", err, page)
		}
		page, err = b.svc.List(t.Context(), payments.Filter{Search: "acme"}, 2, page.EndCursor())
		if err != nil || page.HasNextPage || ids(page.Payments) != ids([]payments.Payment{plain}) {
			t.Errorf("search page 2: %v %+v", err, page)
		}

		if _, err := b.svc.List(t.Context(), payments.Filter{From: both.CreatedAt, To: plain.CreatedAt}, 10, ""); !errors.Is(err, payments.ErrInvalidInput) {
			t.Errorf("a range that ends before it starts: %v, want ErrInvalidInput", err)
		}
	})
}

func TestRecentStats(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		b.mustCreate(t, pix("old")) // 30 hours before the window ends: not counted
		b.clock.Advance(28 * time.Hour)
		b.mustCreate(t, pix("a"))
		b.mustCreate(t, pix("a"))
		b.clock.Advance(time.Hour)
		b.mustCreate(t, pix("b"))
		b.svc.Create(t.Context(), request("client-1", "b", "99", "BRL", payments.MethodPix))
		b.clock.Advance(time.Hour)
		b.mustCreate(t, pix("c"))
		b.mustCreate(t, pix("c"))
		b.mustCreate(t, pix("c"))

		st, err := b.svc.RecentStats(t.Context(), 24)
		if err != nil {
			t.Fatal(err)
		}
		if st.Created != 3 || st.Replayed != 3 || st.Rejected != 1 || len(st.Hours) != 24 {
			t.Fatalf("totals %d/%d/%d over %d hours, want 3/3/1 over 24", st.Created, st.Replayed, st.Rejected, len(st.Hours))
		}
		last3 := st.Hours[21:]
		want := [][3]int{{1, 1, 0}, {1, 0, 1}, {1, 2, 0}}
		for i, h := range last3 {
			if got := [3]int{h.Created, h.Replayed, h.Rejected}; got != want[i] {
				t.Errorf("hour %s: %v, want %v", h.Start.Format(time.RFC3339), got, want[i])
			}
		}
		if !st.Hours[23].Start.Equal(b.clock.Now().Truncate(time.Hour)) {
			t.Errorf("last bucket starts %s, want the current hour", st.Hours[23].Start)
		}
	})
}

// reads is a payments.Reads that serves every read from one database.
type reads struct{ db *gorm.DB }

func (r reads) Read(fn func(*gorm.DB) error) error { return fn(r.db) }
func (r reads) Reader() *gorm.DB                   { return r.db }

// The listing and the overview read through Config.Reads (a replica in
// production); a payment's own page reads the primary, which has its writes.
func TestStaleReadsGoThroughReads(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		other := dbtest.Open(t, db.Dialect) // stands for a replica that has nothing yet
		svc := mustService(t, db.Gorm, payments.Config{Reads: reads{other.Gorm}})
		res, err := svc.Create(t.Context(), pix("k1"))
		if err != nil {
			t.Fatal(err)
		}
		if page, err := svc.List(t.Context(), payments.Filter{}, 10, ""); err != nil || len(page.Payments) != 0 {
			t.Errorf("List = %v, %v; want the replica's (empty) listing", page.Payments, err)
		}
		if st, err := svc.RecentStats(t.Context(), 24); err != nil || st.Created != 0 {
			t.Errorf("RecentStats = %+v, %v; want the replica's (empty) overview", st.Counts, err)
		}
		if _, err := svc.Get(t.Context(), res.Payment.ID); err != nil {
			t.Errorf("Get reads the primary, which has the payment: %v", err)
		}
	})
}

// TestUnstorableIDs: an id or filter holding a NUL byte or bytes that are
// not UTF-8 (PostgreSQL cannot store either, and refuses them with an
// error where SQLite finds nothing) is NOT_FOUND for a payment and a bad
// input for a listing, alike on both databases, never an internal error.
func TestUnstorableIDs(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.mustCreate(t, request("client-1", "nul-1", "10", "BRL", payments.MethodPix)).Payment
		for _, id := range []string{"\x00", p.ID + "\x00", "pay_\xff"} {
			if _, err := b.svc.Get(t.Context(), id); !errors.Is(err, payments.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want NOT_FOUND", id, err)
			}
			if _, err := b.refund(t, id, "nul-r", ptr("1")); !errors.Is(err, payments.ErrNotFound) {
				t.Errorf("Refund(%q) = %v, want NOT_FOUND", id, err)
			}
		}
		for _, after := range []string{"v1:1700000000000000:pay_\x00", "v1:1700000000000000:pay_\xff"} {
			_, err := b.svc.List(t.Context(), payments.Filter{}, 10, base64.RawURLEncoding.EncodeToString([]byte(after)))
			var invalid *payments.InvalidInputError
			if !errors.As(err, &invalid) {
				t.Errorf("List(after %q) = %v, want a bad input", after, err)
			}
		}
		for _, f := range []payments.Filter{{ClientID: "client-1\x00"}, {IdempotencyKey: "nul-1\x00"}, {Search: "\x00"}, {Search: "\xff"}} {
			_, err := b.svc.List(t.Context(), f, 10, "")
			var invalid *payments.InvalidInputError
			if !errors.As(err, &invalid) {
				t.Errorf("List(%+v) = %v, want a bad input", f, err)
			}
		}
		if _, err := b.refund(t, p.ID, "nul-r", ptr("1")); err != nil {
			t.Errorf("a refund after the refused ones: %v", err)
		}
	})
}
