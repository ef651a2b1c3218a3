package payments

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func mustFingerprint(t *testing.T, r CreateRequest) []byte {
	t.Helper()
	p, err := r.validate()
	if err != nil {
		t.Fatalf("validate(%+v): %v", r, err)
	}
	fp, err := fingerprint(fingerprintVersion, p)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// Payloads that are the same after normalisation must share a fingerprint,
// or a well-behaved retry would be refused as a conflict.
func TestFingerprintStable(t *testing.T) {
	t.Parallel()
	base := mustFingerprint(t, validRequest())
	same := map[string]func(*CreateRequest){
		"10.5":            func(r *CreateRequest) { r.Amount = "10.5" },
		"10.500":          func(r *CreateRequest) { r.Amount = "10.500" },
		"1.05e1":          func(r *CreateRequest) { r.Amount = "1.05e1" },
		"brl":             func(r *CreateRequest) { r.Currency = "brl" },
		"another key":     func(r *CreateRequest) { r.IdempotencyKey = "other" },
		"other transport": func(r *CreateRequest) { r.Transport = "rest" },
	}
	for name, change := range same {
		req := validRequest()
		change(&req)
		if got := mustFingerprint(t, req); !bytes.Equal(got, base) {
			t.Errorf("%s: fingerprint %x, want %x as for the base payload", name, got, base)
		}
	}
}

// Any real difference must change the fingerprint, or a different payment
// would be answered with the first one.
func TestFingerprintSensitive(t *testing.T) {
	t.Parallel()
	seen := map[string]string{hex.EncodeToString(mustFingerprint(t, validRequest())): "base"}
	different := map[string]func(*CreateRequest){
		"amount +1 cent":    func(r *CreateRequest) { r.Amount = "10.51" },
		"amount ×10":        func(r *CreateRequest) { r.Amount = "105" },
		"currency USD":      func(r *CreateRequest) { r.Currency = "USD" },
		"currency JPY 1050": func(r *CreateRequest) { r.Currency, r.Amount = "JPY", "1050" },
		"method":            func(r *CreateRequest) { r.Method = MethodBoleto },
		"client":            func(r *CreateRequest) { r.ClientID = "client-2" },
		"client prefix":     func(r *CreateRequest) { r.ClientID = "client-" },
		"client shifted":    func(r *CreateRequest) { r.ClientID = "client-11" },
	}
	for name, change := range different {
		req := validRequest()
		change(&req)
		fp := hex.EncodeToString(mustFingerprint(t, req))
		if other, dup := seen[fp]; dup {
			t.Errorf("%s: same fingerprint as %s", name, other)
		}
		seen[fp] = name
	}
}

// The version 1 encoding is stored with live keys: changing it without a new
// version would turn every replay in flight into a conflict.
func TestFingerprintV1IsPinned(t *testing.T) {
	t.Parallel()
	// printf '\x10cmpay/payment/v1\x08client-1\x041050\x03BRL\x03PIX' | sha256sum
	const want = "81d1409805f0a008ce558c3441029c7d9100fc6c0a8e1f7c05d509b2dac9824d"
	got := hex.EncodeToString(mustFingerprint(t, validRequest()))
	if got != want {
		t.Errorf("v1 fingerprint of the base payload = %s, want %s", got, want)
	}
}

func TestFingerprintUnknownVersion(t *testing.T) {
	t.Parallel()
	p, _ := validRequest().validate()
	if _, err := fingerprint(99, p); err == nil {
		t.Error("fingerprint(99, …) succeeded, want an error for an unknown version")
	}
}
