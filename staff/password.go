package staff

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters. They are written into every
// hash, so raising them later leaves older hashes readable; a sign-in with
// an older hash rewrites it with the current parameters.
type HashParams struct {
	// Memory in KiB, Time (passes) and Threads (lanes).
	Memory  uint32
	Time    uint32
	Threads uint8
}

// DefaultHashParams are OWASP's baseline for argon2id: 19 MiB, two passes,
// one lane (about 30 ms on an idle server core). The memory is why at most
// GOMAXPROCS hashes run at once (Store.hashSlots): the server runs under a
// 64 MiB soft memory limit.
var DefaultHashParams = HashParams{Memory: 19 * 1024, Time: 2, Threads: 1}

// saltLen and keyLen are the salt's and the derived key's lengths in bytes.
const (
	saltLen = 16
	keyLen  = 32
)

// Password rules for passwords people choose (in the UI and on the command
// line). A password set by ADMIN_PASSWORD is the operator's choice and is
// taken as it is.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 256
)

// hashPassword returns the PHC-style encoding of password's argon2id hash
// under p with a fresh random salt:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt, base64>$<hash, base64>
func hashPassword(password string, p HashParams) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

var errBadHash = errors.New("stored password hash is not an argon2id hash this version reads")

// parseHash reads an encoding hashPassword wrote.
func parseHash(encoded string) (p HashParams, salt, key []byte, err error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil ||
		p.Memory == 0 || p.Time == 0 || p.Threads == 0 {
		return p, nil, nil, errBadHash
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil {
		return p, nil, nil, errBadHash
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) == 0 {
		return p, nil, nil, errBadHash
	}
	return p, salt, key, nil
}

// checkPassword reports whether password matches encoded, comparing in
// constant time, and whether the hash was made with parameters other than
// current (and should be rewritten).
func checkPassword(encoded, password string, current HashParams) (ok, stale bool) {
	p, salt, key, err := parseHash(encoded)
	if err != nil {
		return false, false
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, p != current
}

// dummySalt is hashed against when there is no account to check, so that
// an unknown username costs as much time as a wrong password.
var dummySalt = make([]byte, saltLen)

func burnHash(password string, p HashParams) {
	argon2.IDKey([]byte(password), dummySalt, p.Time, p.Memory, p.Threads, keyLen)
}

// ErrBusy: every hashing slot stayed busy for the store's HashWait, so the
// password was not checked. Nothing was learnt: try again in a moment.
var ErrBusy = errors.New("every password-hashing slot is busy: try again in a moment")

// hash runs f in one of the store's hashing slots, waiting for one while
// ctx lasts, and at most HashWait: each hash holds Memory KiB for its
// duration.
func (s *Store) hash(ctx context.Context, f func()) error {
	wait := time.NewTimer(s.hashWait)
	defer wait.Stop()
	select {
	case s.hashSlots <- struct{}{}:
	case <-wait.C:
		return ErrBusy
	case <-ctx.Done():
		// Still a 503 (the deadline), but the log says what was busy.
		return fmt.Errorf("wait for a password-hashing slot, all busy: %w", ctx.Err())
	}
	defer func() { <-s.hashSlots }()
	f()
	return nil
}

// NewPassword makes up a temporary password: 26 characters of base32,
// 128 random bits.
func NewPassword() string { return rand.Text() }

// CheckNewPassword applies the rules for a password someone chooses.
func CheckNewPassword(username, password string) error {
	switch n := utf8.RuneCountInString(password); {
	case !utf8.ValidString(password):
		return invalid("the password is not valid text")
	case n < MinPasswordLen:
		return invalid(fmt.Sprintf("the password must be at least %d characters long", MinPasswordLen))
	case n > MaxPasswordLen:
		return invalid(fmt.Sprintf("the password may be at most %d characters long", MaxPasswordLen))
	case strings.EqualFold(strings.TrimSpace(password), username):
		return invalid("the password must not be the username")
	}
	return nil
}
