package staff

import (
	"encoding/base64"
	"testing"
	"time"
)

// FuzzDecodeAuditCursor: an audit-log cursor is either refused as bad
// input, or names a position both databases hold and order alike (years 1
// to 9999: PostgreSQL refuses times before 4713 BC, SQLite compares times
// as text), and encodes back to itself.
func FuzzDecodeAuditCursor(f *testing.F) {
	f.Add(auditCursor{at: time.Date(2026, 12, 7, 8, 0, 0, 123456000, time.UTC), src: srcStaff, id: 42}.encode())
	for _, raw := range []string{"a1:1:s:1", "a1:1:p:1", "a1:-9223372036854775808:s:1", "a1:1:x:1", "a1:1:s:-1", "a1:+1:s:1", "a1:1:s", "a2:1:s:1"} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(raw)))
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeAuditCursor(s)
		if err != nil {
			return
		}
		if y := c.at.Year(); y < 1 || y > 9999 {
			t.Fatalf("decodeAuditCursor(%q) = %v: a time no database holds alike", s, c.at)
		}
		if again := c.encode(); again != s {
			t.Fatalf("decodeAuditCursor(%q) = %+v, which encodes as %q", s, c, again)
		}
	})
}
