package payments

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

// FuzzParseAmount: any text either parses to an amount that prints back
// to the same value with the currency's digits, or is refused; never a
// panic, never a value that does not round-trip.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"10.50", "0.01", "1e3", ".5", "+7", "-1", "0", "1e999999", "NaN", "9223372036854775807", "92233720368547758.08", "00012.3400", "1_0", ""} {
		f.Add(s, "BRL")
	}
	f.Add("1000", "JPY")
	f.Add("1.234", "BHD")
	f.Add("0.0001", "CLF")
	f.Fuzz(func(t *testing.T, text, code string) {
		currency, err := NormalizeCurrency(code)
		if err != nil {
			return
		}
		m, err := ParseAmount(text, currency)
		if err != nil {
			return
		}
		if m.Minor <= 0 {
			t.Fatalf("ParseAmount(%q, %s) = %d minor units, want > 0", text, currency, m.Minor)
		}
		printed := m.String()
		again, err := ParseAmount(printed, currency)
		if err != nil || again != m {
			t.Fatalf("%q -> %s -> %+v, %v: does not round-trip", text, printed, again, err)
		}
		// The value is the one written: compare as exact decimals.
		want, _, _ := apd.NewFromString(text)
		got, _, _ := apd.NewFromString(printed)
		if want.Cmp(got) != 0 {
			t.Fatalf("%q parsed as %s", text, printed)
		}
	})
}

// FuzzValidateKey: an accepted key is 1 to 100 printable ASCII characters,
// not all spaces; everything else is refused.
func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"order-42", "", " ", "a\tb", "café", strings.Repeat("k", 100), strings.Repeat("k", 101), "\x7f", "k\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := ValidateKey(key)
		ok := len(key) >= 1 && len(key) <= MaxKeyLen && strings.TrimSpace(key) != ""
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				ok = false
			}
		}
		if (err == nil) != ok {
			t.Fatalf("ValidateKey(%q) = %v, but the rules say ok=%v", key, err, ok)
		}
	})
}

// FuzzFingerprint: two requests have the same fingerprint exactly when
// their normalised payloads are equal.
func FuzzFingerprint(f *testing.F) {
	f.Add("c", "10.5", "brl", "PIX", "c", "10.50", "BRL", "PIX")
	f.Add("c", "10.5", "BRL", "PIX", "c", "10.51", "BRL", "PIX")
	f.Add("c", "1", "BRL", "PIX", "c", "1", "USD", "PIX")
	f.Add("ab", "1", "BRL", "PIX", "a", "1", "BRL", "PIX")
	f.Add("c", "1", "BRL", "PIX", "c", "1", "BRL", "BOLETO")
	f.Add("c", "1e2", "JPY", "PIX", "c", "100", "jpy", "PIX")
	f.Fuzz(func(t *testing.T, c1, a1, cur1, m1, c2, a2, cur2, m2 string) {
		p1, err1 := CreateRequest{ClientID: c1, Amount: a1, Currency: cur1, Method: Method(m1), IdempotencyKey: "k"}.validate()
		p2, err2 := CreateRequest{ClientID: c2, Amount: a2, Currency: cur2, Method: Method(m2), IdempotencyKey: "k"}.validate()
		if err1 != nil || err2 != nil {
			return
		}
		f1, _ := fingerprint(fingerprintVersion, p1)
		f2, _ := fingerprint(fingerprintVersion, p2)
		same := p1.clientID == p2.clientID && p1.amount == p2.amount && p1.method == p2.method
		if bytes.Equal(f1, f2) != same {
			t.Fatalf("payloads %+v and %+v: fingerprints equal=%v, payloads equal=%v", p1, p2, bytes.Equal(f1, f2), same)
		}
	})
}
