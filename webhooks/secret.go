package webhooks

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Signing secrets at rest. Every delivery is signed with its endpoint's
// secret, so the secret must stay recoverable and cannot be hashed as API
// tokens are. With a key (WEBHOOK_SECRET_KEY) it is stored sealed:
// AES-256-GCM, with the endpoint's id as additional data, so that a sealed
// secret copied onto another endpoint's row does not open there. A copy of
// the database then holds no secret anyone can sign with. (Someone who can
// write to the database can store a secret in the clear, which is still
// accepted, as before the key; they could as well write events to sign.)
// Without a key, secrets are stored as given, as they always were; with
// one, the secrets stored before it are sealed when the server starts
// (SealSecrets).
//
// Rotation: the previous key (WEBHOOK_SECRET_KEY_PREVIOUS) only opens;
// SealSecrets seals what it opens again under the current key.
// docs/operations/configuration.md says how to roll a new key out over
// several instances.

// KeySize is the length of a secret key: AES-256.
const KeySize = 32

// A sealed secret is "e1:" and the URL-safe base64 of a nonce, then the
// sealed 32 random bytes of the secret ("whsec_" and their base64, as
// newSecret makes it) and the tag: 83 characters, within the column's 100:
// older versions of this server migrate the column to 100 and would cut a
// longer value (models.WebhookEndpoint). A secret of any other form was
// not made by this server and is stored as given.
const (
	sealedPrefix = "e1:"
	secretPrefix = "whsec_"
	secretBytes  = 32
)

// ErrSecretKey: a sealed secret that no configured key opens: the key is
// missing or is not the one it was sealed with.
var ErrSecretKey = errors.New("the signing secret is sealed, and WEBHOOK_SECRET_KEY (or WEBHOOK_SECRET_KEY_PREVIOUS) does not open it")

// secretBox seals and opens secrets. The zero value, without keys, stores
// them as given.
type secretBox struct {
	current  cipher.AEAD // seals and opens; nil without a key
	previous cipher.AEAD // only opens; nil without one
}

func newSecretBox(key, previous []byte) (secretBox, error) {
	var b secretBox
	if len(previous) > 0 && len(key) == 0 {
		return b, errors.New("webhooks: a previous secret key without a current one")
	}
	var err error
	if b.current, err = newAEAD(key); err != nil {
		return b, fmt.Errorf("webhooks: secret key: %w", err)
	}
	if b.previous, err = newAEAD(previous); err != nil {
		return b, fmt.Errorf("webhooks: previous secret key: %w", err)
	}
	return b, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		return nil, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("want %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// randomPart is the 32 random bytes of a secret newSecret made; ok is
// false for a secret of any other form.
func randomPart(secret string) (raw []byte, ok bool) {
	text, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(raw) != secretBytes || base64.RawURLEncoding.EncodeToString(raw) != text {
		return nil, false
	}
	return raw, true
}

// sealable says whether seal stores secret sealed.
func (b secretBox) sealable(secret string) bool {
	_, ok := randomPart(secret)
	return b.current != nil && ok
}

// seal is what is stored for endpointID's secret.
func (b secretBox) seal(endpointID, secret string) string {
	raw, ok := randomPart(secret)
	if b.current == nil || !ok {
		return secret
	}
	nonce := make([]byte, b.current.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24)
	sealed := b.current.Seal(nonce, nonce, raw, []byte(endpointID))
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// open is the secret stored as stored for endpointID.
func (b secretBox) open(endpointID, stored string) (string, error) {
	secret, _, err := b.openWith(endpointID, stored)
	return secret, err
}

// openWith also says whether the secret should be sealed again: it is
// stored as given while there is a key, or sealed under the previous key.
func (b secretBox) openWith(endpointID, stored string) (secret string, reseal bool, err error) {
	body, sealed := strings.CutPrefix(stored, sealedPrefix)
	if !sealed {
		return stored, b.sealable(stored), nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return "", false, fmt.Errorf("a sealed signing secret that is not base64: %w", err)
	}
	for _, k := range []struct {
		aead   cipher.AEAD
		reseal bool
	}{{b.current, false}, {b.previous, true}} {
		if k.aead == nil || len(raw) < k.aead.NonceSize() {
			continue
		}
		nonce, ciphertext := raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():]
		if plain, err := k.aead.Open(nil, nonce, ciphertext, []byte(endpointID)); err == nil && len(plain) == secretBytes {
			return secretPrefix + base64.RawURLEncoding.EncodeToString(plain), k.reseal, nil
		}
	}
	return "", false, ErrSecretKey
}

// SealReport is what SealSecrets did.
type SealReport struct {
	// Sealed counts the secrets it sealed (or sealed again under the
	// current key); Kept those already sealed under it.
	Sealed, Kept int
	// Unopened counts sealed secrets no key given opens; AsGiven those
	// stored as given that stay so (no key, or not made by this server).
	Unopened, AsGiven int
}

// SealSecrets seals, under the current key, every stored secret that is
// not sealed or is sealed under the previous key; without a key it seals
// none, and only counts. The server calls it at start. Each row is written
// only if it still holds what was read, so that instances starting
// together do not undo each other's work (either's result opens).
func (s *Service) SealSecrets(ctx context.Context) (SealReport, error) {
	var report SealReport
	rows, err := s.store.secrets(ctx)
	if err != nil {
		return report, fmt.Errorf("seal webhook secrets: %w", err)
	}
	for _, r := range rows {
		secret, reseal, err := s.secrets.openWith(r.ID, r.Secret)
		switch {
		case err != nil:
			report.Unopened++
			continue
		case !reseal && strings.HasPrefix(r.Secret, sealedPrefix):
			report.Kept++
			continue
		case !reseal:
			report.AsGiven++
			continue
		}
		replaced, err := s.store.replaceSecret(ctx, r.ID, r.Secret, s.secrets.seal(r.ID, secret))
		if err != nil {
			return report, fmt.Errorf("seal webhook secrets: %w", err)
		}
		if replaced {
			report.Sealed++
		} else {
			report.Kept++ // another instance sealed it meanwhile
		}
	}
	return report, nil
}
