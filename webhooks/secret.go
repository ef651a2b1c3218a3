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

	"github.com/cmpay/cmpay/models"
)

// Signing secrets at rest. Every delivery is signed with its endpoint's
// secret, so the secret must stay recoverable and cannot be hashed as API
// tokens are. With a key (WEBHOOK_SECRET_KEY) it is stored sealed:
// AES-256-GCM, with the endpoint's id as additional data, so that a sealed
// secret copied onto another endpoint's row does not open there. A copy of
// the database then holds no secret anyone can sign with. Without a key,
// secrets are stored as given, as they always were; with one, the secrets
// stored before it are sealed when the server starts (SealSecrets).
//
// Rotation: start with the new key as WEBHOOK_SECRET_KEY and the old one as
// WEBHOOK_SECRET_KEY_PREVIOUS. Secrets open under either; SealSecrets seals
// those under the old key again under the new one, after which the old key
// can go.

// KeySize is the length of a secret key: AES-256.
const KeySize = 32

// sealedPrefix marks a sealed secret: "e1:" and the URL-safe base64 of the
// nonce, then the ciphertext and its tag. A generated secret (49
// characters) seals to 106, within the column's 200.
const sealedPrefix = "e1:"

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

// seal is what is stored for endpointID's secret.
func (b secretBox) seal(endpointID, secret string) string {
	if b.current == nil {
		return secret
	}
	nonce := make([]byte, b.current.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24)
	sealed := b.current.Seal(nonce, nonce, []byte(secret), []byte(endpointID))
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
		return stored, b.current != nil, nil
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
		if plain, err := k.aead.Open(nil, nonce, ciphertext, []byte(endpointID)); err == nil {
			return string(plain), k.reseal, nil
		}
	}
	return "", false, ErrSecretKey
}

// SealSecrets seals, under the current key, every stored secret that is
// not sealed or is sealed under the previous key, and returns how many it
// sealed; without a key it seals none. The server calls it at start. Each
// row is written only if it still holds what was read, so that instances
// starting together do not undo each other's work (either's result opens).
// A secret no key opens (a key missing or wrong) is left as it is, and
// counted in an error that wraps ErrSecretKey.
func (s *Service) SealSecrets(ctx context.Context) (int, error) {
	var rows []models.WebhookEndpoint
	if err := s.db.WithContext(ctx).Select("id", "secret").Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("seal webhook secrets: %w", err)
	}
	sealed, unopened := 0, 0
	for _, r := range rows {
		secret, reseal, err := s.secrets.openWith(r.ID, r.Secret)
		if err != nil {
			unopened++
			continue
		}
		if !reseal {
			continue
		}
		res := s.db.WithContext(ctx).Model(&models.WebhookEndpoint{}).Where("id = ? AND secret = ?", r.ID, r.Secret).
			Update("secret", s.secrets.seal(r.ID, secret))
		if res.Error != nil {
			return sealed, fmt.Errorf("seal webhook secrets: %w", res.Error)
		}
		sealed += int(res.RowsAffected)
	}
	if unopened > 0 {
		return sealed, fmt.Errorf("seal webhook secrets: %d endpoints: %w", unopened, ErrSecretKey)
	}
	return sealed, nil
}
