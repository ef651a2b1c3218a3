// Package secrets makes and stores bearer secrets the same way wherever
// CMPay hands one out (API tokens, staff sessions, webhook signing secrets,
// the token generated when none is configured): one place to judge their
// strength and how they are kept.
package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// randomBytes is a secret's randomness: 256 bits, beyond guessing.
const randomBytes = 32

// Random returns a new secret: 256 random bits as URL-safe base64 without
// padding (43 characters), safe in a header, a cookie or a URL.
func Random() string {
	b := make([]byte, randomBytes)
	_, _ = rand.Read(b) // never fails: crypto/rand.Read panics rather than return an error
	return base64.RawURLEncoding.EncodeToString(b)
}

// Hash is what is stored of a secret to find it again without keeping it:
// its SHA-256 in hex. A plain hash is enough for 256 random bits, which no
// dictionary holds; passwords need a slow hash instead.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
