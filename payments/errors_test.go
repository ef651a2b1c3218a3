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

// TestStateConflictMessage: a conflict names the payment's status, and, when
// a capture or cancel still waits for the processor (the contract's
// "while a capture or cancel is pending, another capture or cancel gets
// PAYMENT_STATE_CONFLICT"), that pending operation rather than a status that
// would allow the request.
func TestStateConflictMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  StateConflictError
		want string
	}{
		{StateConflictError{Operation: OpCapture, Status: StatusCanceled}, "cannot capture a payment that is CANCELED"},
		{StateConflictError{Operation: OpCapture, Status: StatusAuthorized, PendingOperation: OpCapture},
			"cannot capture the payment while its capture waits for the processor's answer; it stays AUTHORIZED until then"},
		{StateConflictError{Operation: OpCancel, Status: StatusAuthorized, PendingOperation: OpCapture},
			"cannot cancel the payment while its capture waits for the processor's answer; it stays AUTHORIZED until then"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q\nwant      %q", got, tc.want)
		}
	}
}
