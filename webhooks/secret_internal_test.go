package webhooks

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestSecretBox: a sealed secret opens for its own endpoint under the key
// it was sealed with (or the previous one, which asks for a reseal), and
// for nothing else; without a key secrets pass as given.
func TestSecretBox(t *testing.T) {
	t.Parallel()
	key, other := bytes.Repeat([]byte{7}, KeySize), bytes.Repeat([]byte{8}, KeySize)
	box := func(k, prev []byte) secretBox {
		b, err := newSecretBox(k, prev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	secret := newSecret()
	sealed := box(key, nil).seal("we_1", secret)
	if !strings.HasPrefix(sealed, sealedPrefix) || strings.Contains(sealed, secret[len(secretPrefix):]) || len(sealed) > 100 {
		t.Fatalf("sealed %q as %q (%d characters; the column holds 100)", secret, sealed, len(sealed))
	}
	if got := box(key, nil).seal("we_1", "made elsewhere"); got != "made elsewhere" {
		t.Errorf("a secret this server did not make was sealed as %q; want it as given", got)
	}
	if again := box(key, nil).seal("we_1", secret); again == sealed {
		t.Error("two seals of one secret are equal: the nonce is not fresh")
	}
	// A build of one day sealed the secret's whole text; such a value must
	// not open as a secret of other bytes.
	whole := func() string {
		b := box(key, nil)
		nonce := make([]byte, b.current.NonceSize())
		return sealedPrefix + base64.RawURLEncoding.EncodeToString(b.current.Seal(nonce, nonce, []byte(secret), []byte("we_1")))
	}()
	for _, tc := range []struct {
		name       string
		box        secretBox
		endpoint   string
		stored     string
		want       string
		wantReseal bool
		wantErr    bool
	}{
		{"its key", box(key, nil), "we_1", sealed, secret, false, false},
		{"the previous key", box(other, key), "we_1", sealed, secret, true, false},
		{"another endpoint's row", box(key, nil), "we_2", sealed, "", false, true},
		{"the whole text sealed", box(key, nil), "we_1", whole, "", false, true},
		{"another key", box(other, nil), "we_1", sealed, "", false, true},
		{"no key", box(nil, nil), "we_1", sealed, "", false, true},
		{"not base64", box(key, nil), "we_1", sealedPrefix + "***", "", false, true},
		{"too short", box(key, nil), "we_1", sealedPrefix + "AAAA", "", false, true},
		{"as given, no key", box(nil, nil), "we_1", secret, secret, false, false},
		{"as given, with a key", box(key, nil), "we_1", secret, secret, true, false},
		{"not made here, with a key", box(key, nil), "we_1", "plain", "plain", false, false},
		{"not canonical, with a key", box(key, nil), "we_1", secret + "A", secret + "A", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reseal, err := tc.box.openWith(tc.endpoint, tc.stored)
			if (err != nil) != tc.wantErr || got != tc.want || reseal != tc.wantReseal {
				t.Errorf("openWith = %q, %v, %v; want %q, %v, error: %v", got, reseal, err, tc.want, tc.wantReseal, tc.wantErr)
			}
			if err != nil && tc.stored != sealedPrefix+"***" && !errors.Is(err, ErrSecretKey) {
				t.Errorf("error %v, want ErrSecretKey", err)
			}
		})
	}
	if _, err := newSecretBox(nil, key); err == nil {
		t.Error("a previous key without a current one was accepted")
	}
	if _, err := newSecretBox(key[:16], nil); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}
