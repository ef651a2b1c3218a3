package payments_test

import (
	"errors"
	"fmt"
	"testing"

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

		tests := []struct {
			name   string
			filter payments.Filter
			want   []payments.Payment
		}{
			{"all, newest first", payments.Filter{}, []payments.Payment{b2, b1, a2, a1}},
			{"client", payments.Filter{ClientID: "a"}, []payments.Payment{a2, a1}},
			{"key across clients", payments.Filter{IdempotencyKey: "k1"}, []payments.Payment{b1, a1}},
			{"client and key", payments.Filter{ClientID: "b", IdempotencyKey: "k1"}, []payments.Payment{b1}},
			{"flagged", payments.Filter{Flagged: true}, []payments.Payment{b2, a2}},
			{"flagged for a client", payments.Filter{Flagged: true, ClientID: "a"}, []payments.Payment{a2}},
			{"nothing", payments.Filter{ClientID: "nobody"}, nil},
		}
		for _, tt := range tests {
			page, err := b.svc.List(t.Context(), tt.filter, 10, "")
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got, want := ids(page.Payments), ids(tt.want); got != want {
				t.Errorf("%s: got %s, want %s", tt.name, got, want)
			}
		}
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

func ids(ps []payments.Payment) string {
	s := ""
	for _, p := range ps {
		s += p.ID + " "
	}
	return s
}
