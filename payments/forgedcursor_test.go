package payments_test

import (
	"encoding/base64"
	"errors"
	"testing"

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
