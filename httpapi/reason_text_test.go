package httpapi_test

import (
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// TestRefundReasonNotUTF8IsBadInput: a refund reason holding a lone
// surrogate escape, in a variable or a literal, reaches the server as
// U+FFFD (the decoders' stand-in); it is refused as a clientId is, not
// stored as a character that was never sent (REST refuses the body).
func TestRefundReasonNotUTF8IsBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.create(t, "reason-1", input("c1", "10", "BRL", "PIX"))
		for _, body := range []string{
			`{"query":"mutation($r: String) { refundPayment(paymentId: \"` + p.Payment.ID + `\", reason: $r, idempotencyKey: \"r1\") { replayed } }","variables":{"r":"ok\ud800"}}`,
			`{"query":"mutation { refundPayment(paymentId: \"` + p.Payment.ID + `\", reason: \"ok\\ud800\", idempotencyKey: \"r2\") { replayed } }"}`,
		} {
			if res := b.post(t, body); res.code() != "BAD_USER_INPUT" || res.Errors[0].Extensions["field"] != "reason" {
				t.Errorf("reason with a lone surrogate, body %s: %+v, want BAD_USER_INPUT on reason", body, res)
			}
		}
	})
}
