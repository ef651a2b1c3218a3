package staff_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

// TestAuditLogRefusesForgedCursorTimes: an audit cursor whose time no
// database holds alike is bad input on both databases, never a database
// error (PostgreSQL refuses 290309 BC) nor a page that differs between
// them; nor is a cursor spelled other than the log spells it.
func TestAuditLogRefusesForgedCursorTimes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newStore(t, db, newClock())
		for _, raw := range []string{
			"a1:-9223372036854775808:s:1", // 290309 BC
			"a1:253402300800000000:s:1",   // year 10000
			"a1:+1796284800000000:s:1",    // a sign encode never writes
			"a1:1796284800000000:s:01",    // nor a leading zero
		} {
			after := base64.RawURLEncoding.EncodeToString([]byte(raw))
			_, err := s.AuditLog(t.Context(), staff.AuditFilter{}, 10, after)
			var bad *staff.InputError
			if !errors.As(err, &bad) {
				t.Errorf("AuditLog(after %q) = %v, want an InputError", raw, err)
			}
		}
	})
}

// TestAuditLogTimeRangeBeyondYear9999: the audit page's "to" day
// 9999-12-31 becomes To = 10000-01-01, which SQLite compares as text,
// before every entry: the range is refused as bad input on both databases.
func TestAuditLogTimeRangeBeyondYear9999(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newStore(t, db, newClock())
		far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, f := range []staff.AuditFilter{{To: far}, {From: far}} {
			_, err := s.AuditLog(t.Context(), f, 10, "")
			var bad *staff.InputError
			if !errors.As(err, &bad) {
				t.Errorf("AuditLog(%+v) = %v, want an InputError", f, err)
			}
		}
	})
}
