package payments

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// A payment's id is all a payments:create token needs to read it, so one
// id must tell nothing of the next: two made in the same millisecond share
// their time, and nothing of their 80 random bits beyond chance. (A
// monotonic ULID would make the second the first plus at most 2^32.)
func TestIDsOfOneMillisecondShareNoRandomBits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefix string
		make   func() string
	}{{"pay_", newPaymentID}, {"ref_", newRefundID}} {
		first, second, ok := twoInOneMillisecond(t, c.prefix, c.make)
		if !ok {
			t.Fatalf("%s: no two ids made in the same millisecond within a second", c.prefix)
		}
		step := new(big.Int).Sub(new(big.Int).SetBytes(second.Entropy()), new(big.Int).SetBytes(first.Entropy()))
		// Within 2^32 of each other by chance once in 2^47.
		if step.CmpAbs(big.NewInt(1<<32)) <= 0 {
			t.Errorf("%s: %s then %s: the second is the first plus %s", c.prefix, first, second, step)
		}
	}
}

// twoInOneMillisecond makes ids until two in a row carry the same time.
func twoInOneMillisecond(t *testing.T, prefix string, make func() string) (ulid.ULID, ulid.ULID, bool) {
	t.Helper()
	parse := func(id string) ulid.ULID {
		u, err := ulid.Parse(strings.TrimPrefix(id, prefix))
		if err != nil || !strings.HasPrefix(id, prefix) {
			t.Fatalf("id %q: %v", id, err)
		}
		return u
	}
	prev := parse(make())
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		next := parse(make())
		if next.Time() == prev.Time() {
			return prev, next, true
		}
		prev = next
	}
	return ulid.ULID{}, ulid.ULID{}, false
}
