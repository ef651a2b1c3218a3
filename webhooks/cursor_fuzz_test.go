package webhooks

import (
	"testing"
)

// FuzzDecodeDeliveryCursor: a delivery cursor is either refused as bad
// input, or names an id a delivery can have and encodes back to itself,
// so that one position has one cursor.
func FuzzDecodeDeliveryCursor(f *testing.F) {
	f.Add(encodeDeliveryCursor(42))
	for _, raw := range []string{"d1:1", "d1:0", "d1:-1", "d1:+1", "d1:01", "d2:1", "d1:", "d1:1:2", "d1:9223372036854775807",
		"d1:9223372036854775808", "v1:1:pay_x", "d1:1\x00"} {
		f.Add(b64(raw))
	}
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, cursor string) {
		id, err := decodeDeliveryCursor("after", cursor)
		if err != nil {
			return
		}
		if id < 1 {
			t.Fatalf("decodeDeliveryCursor(%q) = %d: no delivery has it", cursor, id)
		}
		if again := encodeDeliveryCursor(id); again != cursor {
			t.Fatalf("decodeDeliveryCursor(%q) = %d, which encodes as %q", cursor, id, again)
		}
	})
}
