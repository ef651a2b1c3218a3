package payments_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// TestListRefusesForgedCursorTimes: a cursor is opaque, but a client can
// forge one; a time no payment can have is bad input on both databases,
// never a database error (PostgreSQL refuses timestamps before 4713 BC
// with SQLSTATE 22008) and never a page that differs between them (SQLite
// compares a year-10000 time as text, before "2026"); nor is a cursor
// spelled other than encodeCursor spells it.
func TestListRefusesForgedCursorTimes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, raw := range []string{
			"v1:-9223372036854775808:pay_x", // 290309 BC
			"v1:253402300800000000:pay_x",   // year 10000
			"v1:+1796284800000000:pay_x",    // a sign encodeCursor never writes
			"v1:01796284800000000:pay_x",    // nor a leading zero
		} {
			cursor := base64.RawURLEncoding.EncodeToString([]byte(raw))
			_, err := b.svc.List(t.Context(), payments.Filter{}, 10, cursor)
			if !errors.Is(err, payments.ErrInvalidInput) {
				t.Errorf("List(after %q) = %v, want ErrInvalidInput", raw, err)
			}
		}
	})
}

// TestListDateRangeBeyondYear9999: the admin's "to" day 9999-12-31 becomes
// To = 10000-01-01 (the day is included). PostgreSQL lists every payment
// before it; SQLite compares the times as text, "10000-…" < "2026-…", and
// lists none (the list page and the CSV export alike). Either both list
// them or the filter is refused as bad input.
func TestListDateRangeBeyondYear9999(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		if _, err := b.svc.Create(t.Context(), pix("far-to")); err != nil {
			t.Fatal(err)
		}
		to := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		page, err := b.svc.List(t.Context(), payments.Filter{To: to}, 10, "")
		if err == nil && len(page.Payments) != 1 || err != nil && !errors.Is(err, payments.ErrInvalidInput) {
			t.Errorf("List(To %v) = %d payments, %v; want the one payment, or ErrInvalidInput", to, len(page.Payments), err)
		}
	})
}
