package payments

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/storable"
)

// FuzzDecodeCursor: a cursor is either refused as bad input, or names a
// position both databases hold and order alike (years 1 to 9999: PostgreSQL
// refuses times before 4713 BC, SQLite compares times as text), and
// encodes back to itself, so that one position has one cursor.
func FuzzDecodeCursor(f *testing.F) {
	at := time.Date(2026, 12, 7, 8, 0, 0, 123456000, time.UTC)
	f.Add(encodeCursor(Payment{ID: "pay_01M97QYG01XGYSXEN5DVVHZ55T", CreatedAt: at}))
	for _, raw := range []string{"v1:1:x", "v1::x", "v1:1:", "v2:1:x", "v1:-9223372036854775808:x", "v1:+5:x", "v1:1:a:b", "v1:1:\xff", "v1:1:\x00"} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(raw)))
	}
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, cursor string) {
		at, id, err := decodeCursor(cursor)
		if err != nil {
			return
		}
		if y := at.Year(); y < 1 || y > 9999 {
			t.Fatalf("decodeCursor(%q) = %v: a time no database holds alike", cursor, at)
		}
		if !storable.Text(id) || id == "" {
			t.Fatalf("decodeCursor(%q): id %q cannot be stored", cursor, id)
		}
		if again := encodeCursor(Payment{ID: id, CreatedAt: at}); again != cursor {
			t.Fatalf("decodeCursor(%q) = %v, %q, which encodes as %q", cursor, at, id, again)
		}
	})
}
