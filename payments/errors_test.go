package payments

import "testing"

// TestKeyReusedMessage: the message names the key's payment, its first
// operation and the fields that differ, and reads as a sentence when none
// can be named.
func TestKeyReusedMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  KeyReusedError
		want string
	}{
		{KeyReusedError{PaymentID: "pay_1", Operation: OpCreate, DifferingFields: []string{"amount", "method"}},
			"idempotency key already used for payment pay_1 with a different amount, method; use a new key for a new request"},
		{KeyReusedError{PaymentID: "pay_1", Operation: OpCreate, DifferingFields: []string{"operation"}},
			"idempotency key already used for payment pay_1 with a different operation; use a new key for a new request"},
		{KeyReusedError{PaymentID: "pay_1", Operation: OpCreate},
			"idempotency key already used for payment pay_1 with a different request; use a new key for a new request"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q\nwant      %q", got, tc.want)
		}
	}
}
