package secrets

import (
	"encoding/base64"
	"testing"
)

// Random gives 256 bits as unpadded URL-safe base64, different each time.
func TestRandom(t *testing.T) {
	t.Parallel()
	a, b := Random(), Random()
	if a == b {
		t.Fatal("two secrets alike")
	}
	raw, err := base64.RawURLEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 || len(a) != 43 {
		t.Errorf("secret %q: %d bytes, %v", a, len(raw), err)
	}
}

// Hash is the hex SHA-256 that stored tokens and sessions are looked up by.
func TestHash(t *testing.T) {
	t.Parallel()
	// sha256("abc"), from FIPS 180-2's examples.
	if got := Hash("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Hash(abc) = %s", got)
	}
}
