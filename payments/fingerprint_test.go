package payments

import (
	"bytes"
	"encoding/hex"
	"slices"
	"testing"
)

func mustCommand(t *testing.T, build func() (*command, error)) *command {
	t.Helper()
	cmd, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}

func createCmd(t *testing.T, r CreateRequest) *command { t.Helper(); return mustCommand(t, r.command) }

// Payloads that are the same after normalisation must share a fingerprint,
// or a well-behaved retry would be refused as a conflict.
func TestFingerprintStable(t *testing.T) {
	t.Parallel()
	yes := true
	base := createCmd(t, validRequest()).fp
	same := map[string]func(*CreateRequest){
		"10.5":             func(r *CreateRequest) { r.Amount = "10.5" },
		"10.500":           func(r *CreateRequest) { r.Amount = "10.500" },
		"1.05e1":           func(r *CreateRequest) { r.Amount = "1.05e1" },
		"brl":              func(r *CreateRequest) { r.Currency = "brl" },
		"another key":      func(r *CreateRequest) { r.IdempotencyKey = "other" },
		"other transport":  func(r *CreateRequest) { r.Transport = "rest" },
		"capture explicit": func(r *CreateRequest) { r.Capture = &yes },
	}
	for name, change := range same {
		req := validRequest()
		change(&req)
		if got := createCmd(t, req).fp; !bytes.Equal(got, base) {
			t.Errorf("%s: fingerprint %x, want %x as for the base payload", name, got, base)
		}
	}
}

// Any real difference must change the fingerprint, or a different request
// would be answered with the first one's result.
func TestFingerprintSensitive(t *testing.T) {
	t.Parallel()
	no := true
	no = !no
	ten, five, why := "10", "5", "duplicate"
	seen := map[string]string{}
	add := func(name string, cmd *command) {
		fp := hex.EncodeToString(cmd.fp)
		if other, dup := seen[fp]; dup {
			t.Errorf("%s: same fingerprint as %s", name, other)
		}
		seen[fp] = name
	}
	add("base", createCmd(t, validRequest()))
	different := map[string]func(*CreateRequest){
		"amount +1 cent":    func(r *CreateRequest) { r.Amount = "10.51" },
		"amount ×10":        func(r *CreateRequest) { r.Amount = "105" },
		"currency USD":      func(r *CreateRequest) { r.Currency = "USD" },
		"currency JPY 1050": func(r *CreateRequest) { r.Currency, r.Amount = "JPY", "1050" },
		"method":            func(r *CreateRequest) { r.Method = MethodBoleto },
		"authorize only":    func(r *CreateRequest) { r.Capture = &no },
	}
	for name, change := range different {
		req := validRequest()
		change(&req)
		add(name, createCmd(t, req))
	}
	for name, build := range map[string]func() (*command, error){
		"capture all":       CaptureRequest{PaymentID: "pay_1", IdempotencyKey: "k"}.command,
		"capture 10":        CaptureRequest{PaymentID: "pay_1", Amount: &ten, IdempotencyKey: "k"}.command,
		"capture other":     CaptureRequest{PaymentID: "pay_2", IdempotencyKey: "k"}.command,
		"cancel":            CancelRequest{PaymentID: "pay_1", IdempotencyKey: "k"}.command,
		"refund all":        RefundRequest{PaymentID: "pay_1", IdempotencyKey: "k"}.command,
		"refund 10":         RefundRequest{PaymentID: "pay_1", Amount: &ten, IdempotencyKey: "k"}.command,
		"refund 5":          RefundRequest{PaymentID: "pay_1", Amount: &five, IdempotencyKey: "k"}.command,
		"refund 10, reason": RefundRequest{PaymentID: "pay_1", Amount: &ten, Reason: &why, IdempotencyKey: "k"}.command,
	} {
		add(name, mustCommand(t, build))
	}
}

// The version 1 encoding is stored with keys written before the lifecycle:
// changing it would turn their replays into conflicts.
func TestFingerprintV1IsPinned(t *testing.T) {
	t.Parallel()
	// printf '\x10cmpay/payment/v1\x08client-1\x041050\x03BRL\x03PIX' | sha256sum
	const want = "81d1409805f0a008ce558c3441029c7d9100fc6c0a8e1f7c05d509b2dac9824d"
	cmd := createCmd(t, validRequest())
	fp, ok := fingerprintV1(cmd.clientID, cmd.op, cmd.amount, cmd.method, cmd.capture)
	if got := hex.EncodeToString(fp); !ok || got != want {
		t.Errorf("v1 fingerprint of the base payload = %s (%v), want %s", got, ok, want)
	}
	no := false
	req := validRequest()
	req.Capture = &no
	cmd = createCmd(t, req)
	if _, ok := fingerprintV1(cmd.clientID, cmd.op, cmd.amount, cmd.method, cmd.capture); ok {
		t.Error("version 1 expressed an authorize-only create, which it never knew")
	}
}

// The version 2 encoding is stored with every key since: pin it too.
func TestFingerprintV2IsPinned(t *testing.T) {
	t.Parallel()
	// printf '\x14cmpay/idempotency/v2\x5f{"amount":"10.5","capture":"true","currency":"BRL","method":"PIX","operation":"CREATE_PAYMENT"}' | sha256sum
	const want = "8a270970082e4bd732e9b71e6113a3cd6ba5136e04ad837867fefd898f8c95be"
	cmd := createCmd(t, validRequest())
	if got := cmd.params.encode(); got != `{"amount":"10.5","capture":"true","currency":"BRL","method":"PIX","operation":"CREATE_PAYMENT"}` {
		t.Fatalf("canonical params = %s", got)
	}
	if got := hex.EncodeToString(cmd.fp); got != want {
		t.Errorf("v2 fingerprint of the base payload = %s, want %s", got, want)
	}
}

func TestDifferingFields(t *testing.T) {
	t.Parallel()
	create := Params{FieldOperation: "CREATE_PAYMENT", FieldAmount: "10.5", FieldCurrency: "BRL", FieldMethod: "PIX", FieldCapture: "true"}
	refund := Params{FieldOperation: "REFUND_PAYMENT", FieldPaymentID: "pay_1", FieldAmount: "10"}
	tests := []struct {
		name      string
		held, now Params
		want      []string
	}{
		{"same", create, create, []string{}},
		{"another operation", create, refund, []string{"operation", "amount"}},
		{"another operation, same amount", create, with(refund, FieldAmount, "10.5"), []string{"operation"}},
		{"another operation and payment", Params{FieldOperation: "CAPTURE_PAYMENT", FieldPaymentID: "pay_1"},
			Params{FieldOperation: "CANCEL_PAYMENT", FieldPaymentID: "pay_2"}, []string{"operation", "paymentId"}},
		{"another operation, same payment", Params{FieldOperation: "CAPTURE_PAYMENT", FieldPaymentID: "pay_1", FieldAmount: "5"},
			Params{FieldOperation: "CANCEL_PAYMENT", FieldPaymentID: "pay_1"}, []string{"operation"}},
		{"amount", refund, with(refund, FieldAmount, "11"), []string{"amount"}},
		{"amount left out", refund, without(refund, FieldAmount), []string{"amount"}},
		{"reason added", refund, with(refund, FieldReason, "x"), []string{"reason"}},
		{"another payment", refund, with(refund, FieldPaymentID, "pay_2"), []string{"paymentId"}},
		{"token added", create, with(create, FieldPaymentMethodToken, "pm_card_visa"), []string{"paymentMethodToken"}},
		{"another token", with(create, FieldPaymentMethodToken, "pm_card_visa"),
			with(create, FieldPaymentMethodToken, "pm_card_mastercard"), []string{"paymentMethodToken"}},
		{"currency and capture", create, with(with(create, FieldCurrency, "USD"), FieldCapture, "false"), []string{"currency", "capture"}},
	}
	for _, tt := range tests {
		if got := differingFields(tt.held, tt.now); !slices.Equal(got, tt.want) {
			t.Errorf("%s: differingFields = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func with(p Params, f Field, v string) Params {
	out := Params{}
	for k, x := range p {
		out[k] = x
	}
	out[f] = v
	return out
}

func without(p Params, f Field) Params {
	out := with(p, f, "")
	delete(out, f)
	return out
}
