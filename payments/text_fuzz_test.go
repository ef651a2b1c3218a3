package payments

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cmpay/cmpay/internal/clientid"
	"github.com/cmpay/cmpay/internal/storable"
)

// FuzzClientIDAndReason: a client id or refund reason a request is accepted
// with can be stored on both databases and shown to support staff as it
// is: valid UTF-8 without U+FFFD (a decoder's stand-in for what was sent),
// no NUL or other control or format character, within its length once
// normalized, and (a client id) in Normalization Form C, not blank.
func FuzzClientIDAndReason(f *testing.F) {
	for _, s := range []string{"c1", "café", "cafe\u0301", " ", "\u00a0", "a\u200bb", "\u202e", "\xff", "a\x00", "\ufffd", strings.Repeat("\u0958", 100), strings.Repeat("é", 101)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, err := CreateRequest{ClientID: text, Amount: "1", Currency: "BRL", Method: MethodPix, IdempotencyKey: "k"}.command()
		if err == nil {
			id := cmd.clientID
			if !storable.Text(id) || strings.ContainsRune(id, utf8.RuneError) || utf8.RuneCountInString(id) > MaxClientIDLen || !clientid.Normalized(id) || strings.TrimSpace(id) == "" || hasInvisible(id) {
				t.Fatalf("client id %q accepted as %q", text, id)
			}
		}
		reason := text
		if _, err := (RefundRequest{PaymentID: "pay_x", Reason: &reason, IdempotencyKey: "k"}).command(); err == nil {
			if !storable.Text(text) || utf8.RuneCountInString(text) > MaxReasonLen || hasInvisible(text) || strings.ContainsRune(text, utf8.RuneError) {
				t.Fatalf("reason %q accepted", text)
			}
		}
	})
}

func hasInvisible(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf) }) >= 0
}
