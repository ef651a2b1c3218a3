package payments

import (
	"bytes"
	"math/big"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

// FuzzParseAmount: any text either parses to an amount that prints back
// to the same value with the currency's digits, or is refused; never a
// panic, never a value that does not round-trip.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"10.50", "0.01", "1e3", ".5", "+7", "-1", "0", "1e999999", "NaN", "9223372036854775807", "92233720368547758.08", "00012.3400", "1_0", "", ".+5", ".-10"} {
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
		// The value is the one written, by another parser than the one
		// the code uses (apd's takes ".+5" for 0.05): compare as exact
		// fractions.
		want, ok := new(big.Rat).SetString(text)
		got, _ := new(big.Rat).SetString(printed)
		if !ok || want.Cmp(got) != 0 {
			t.Fatalf("%q parsed as %s (math/big reads it: %v, as %v)", text, printed, ok, want)
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
		ok := len(key) >= 1 && len(key) <= MaxKeyLen && key[0] != ' ' && key[len(key)-1] != ' '

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

// FuzzFingerprint: two creates have the same fingerprint exactly when
// their normalised payloads are equal.
func FuzzFingerprint(f *testing.F) {
	f.Add("10.5", "brl", "PIX", true, "10.50", "BRL", "PIX", true)
	f.Add("10.5", "BRL", "PIX", true, "10.51", "BRL", "PIX", true)
	f.Add("1", "BRL", "PIX", true, "1", "USD", "PIX", true)
	f.Add("1", "BRL", "PIX", true, "1", "BRL", "PIX", false)
	f.Add("1", "BRL", "PIX", true, "1", "BRL", "BOLETO", true)
	f.Add("1e2", "JPY", "PIX", true, "100", "jpy", "PIX", true)
	f.Fuzz(func(t *testing.T, a1, cur1, m1 string, c1 bool, a2, cur2, m2 string, c2 bool) {
		cmd1, err1 := CreateRequest{ClientID: "c", Amount: a1, Currency: cur1, Method: Method(m1), Capture: &c1, IdempotencyKey: "k"}.command()
		cmd2, err2 := CreateRequest{ClientID: "c", Amount: a2, Currency: cur2, Method: Method(m2), Capture: &c2, IdempotencyKey: "k"}.command()
		if err1 != nil || err2 != nil {
			return
		}
		same := cmd1.amount == cmd2.amount && cmd1.method == cmd2.method && cmd1.capture == cmd2.capture
		if bytes.Equal(cmd1.fp, cmd2.fp) != same {
			t.Fatalf("payloads %+v and %+v: fingerprints equal=%v, payloads equal=%v", cmd1.params, cmd2.params, bytes.Equal(cmd1.fp, cmd2.fp), same)
		}
		if len(differingFields(cmd1.params, cmd2.params)) == 0 != same {
			t.Fatalf("payloads %+v and %+v: differing fields %v, payloads equal=%v", cmd1.params, cmd2.params, differingFields(cmd1.params, cmd2.params), same)
		}
	})
}

// FuzzParseChangeAmount: a capture's or refund's amount, given without a
// currency, is either refused, or read so that in any currency it yields
// exactly what ParseAmount yields for that currency, or the same refusal.
func FuzzParseChangeAmount(f *testing.F) {
	for _, s := range []string{"10.50", "0.0001", "1e3", "1000", "1.5", "9223372036854775807", "0.00001", "1e30", "-1", "", "abc", ".+5", ".-10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		a, err := parseChangeAmount(text)
		if err != nil {
			return
		}
		for _, code := range []string{"JPY", "BRL", "BHD", "CLF"} {
			got, gotErr := a.in(code)
			want, wantErr := ParseAmount(text, code)
			if (gotErr == nil) != (wantErr == nil) || got != want {
				t.Fatalf("%q in %s: %+v, %v; ParseAmount says %+v, %v", text, code, got, gotErr, want, wantErr)
			}
		}
		if d, _, err := apd.NewFromString(a.canonical); err != nil || d.Sign() <= 0 {
			t.Fatalf("%q: canonical %q is not a positive decimal", text, a.canonical)
		}
		// The same value by another parser (apd's takes ".+5" for 0.05).
		want, okText := new(big.Rat).SetString(text)
		got, okCanonical := new(big.Rat).SetString(a.canonical)
		if !okText || !okCanonical || want.Cmp(got) != 0 {
			t.Fatalf("%q: canonical %q; math/big reads them as %v (%v) and %v (%v)", text, a.canonical, want, okText, got, okCanonical)
		}
	})
}

// FuzzEncodeParams: encode writes what encoding/json writes for the same
// params, whatever the values (a refund's reason and a payment id are the
// client's text), so that a stored key's params and fingerprint never
// depend on which of encode's two paths made them.
func FuzzEncodeParams(f *testing.F) {
	for _, s := range []string{"10.5", "a reason", `quote " and \ slash`, "<b>&amp;</b>", "tab\tnew\nline", "é ü \u2028", "\xff", ""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, id, reason string) {
		for _, p := range []Params{
			{FieldOperation: string(OpRefund), FieldPaymentID: id, FieldAmount: "10.5", FieldReason: reason},
			{FieldOperation: string(OpCapture), FieldPaymentID: id},
			{Field(id): reason},
			{Field(id): reason, Field(reason): id, FieldReason: id, FieldAmount: reason},
			// More keys than a request has: encode hands them to encoding/json.
			{"a": id, "b": reason, "c": id, "d": reason, "e": id, "f": reason, "g": id, "h": reason, "i": id},
			nil,
		} {
			if got, want := p.encode(), p.encodeJSON(); got != want {
				t.Fatalf("encode(%q) = %s, encoding/json says %s", p, got, want)
			}
		}
	})
}
