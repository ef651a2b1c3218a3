package payments

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// validRequest is a request every check accepts; tests change one field.
func validRequest() CreateRequest {
	return CreateRequest{
		ClientID:       "client-1",
		Amount:         "10.50",
		Currency:       "BRL",
		Method:         MethodPix,
		IdempotencyKey: "order-42",
	}
}

// TestValidateBadInput is the contract's bad-input list, one row per rule.
func TestValidateBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		change        func(*CreateRequest)
		wantField     string
		wantInMessage string
	}{
		{"empty key", func(r *CreateRequest) { r.IdempotencyKey = "" }, "idempotencyKey", "must not be empty"},
		{"blank key", func(r *CreateRequest) { r.IdempotencyKey = "   " }, "idempotencyKey", "must not be empty"},
		{"key of 101 characters", func(r *CreateRequest) { r.IdempotencyKey = strings.Repeat("k", 101) }, "idempotencyKey", "the limit is 100"},
		{"key with a tab", func(r *CreateRequest) { r.IdempotencyKey = "a\tb" }, "idempotencyKey", "printable ASCII"},
		{"key with a newline", func(r *CreateRequest) { r.IdempotencyKey = "a\n" }, "idempotencyKey", "printable ASCII"},
		{"key with DEL", func(r *CreateRequest) { r.IdempotencyKey = "a\x7f" }, "idempotencyKey", "printable ASCII"},
		{"key with é", func(r *CreateRequest) { r.IdempotencyKey = "café" }, "idempotencyKey", "U+00E9"},
		{"key with an emoji", func(r *CreateRequest) { r.IdempotencyKey = "k🙂" }, "idempotencyKey", "printable ASCII"},
		{"key with a byte that is not UTF-8", func(r *CreateRequest) { r.IdempotencyKey = "k\xff" }, "idempotencyKey", "the byte 0xFF, which is not UTF-8, at byte 1"},
		{"amount not a number", func(r *CreateRequest) { r.Amount = "ten" }, "amount", "not a decimal number"},
		{"amount empty", func(r *CreateRequest) { r.Amount = "" }, "amount", "must not be empty"},
		{"amount zero", func(r *CreateRequest) { r.Amount = "0" }, "amount", "greater than zero"},
		{"amount negative", func(r *CreateRequest) { r.Amount = "-1" }, "amount", "greater than zero"},
		{"amount with too many digits", func(r *CreateRequest) { r.Amount = "10.501" }, "amount", "fraction digits"},
		{"JPY amount with cents", func(r *CreateRequest) { r.Amount, r.Currency = "100.5", "JPY" }, "amount", "JPY allows 0"},
		{"amount too large", func(r *CreateRequest) { r.Amount = "1e30" }, "amount", "larger than can be stored"},
		{"currency unknown", func(r *CreateRequest) { r.Currency = "ABC" }, "currency", "not an active ISO 4217"},
		{"currency withdrawn", func(r *CreateRequest) { r.Currency = "HRK" }, "currency", "not an active ISO 4217"},
		{"currency empty", func(r *CreateRequest) { r.Currency = "" }, "currency", "three-letter"},
		{"currency numeric", func(r *CreateRequest) { r.Currency = "986" }, "currency", "not an active ISO 4217"},
		{"client empty", func(r *CreateRequest) { r.ClientID = "" }, "clientId", "must not be empty"},
		{"client blank", func(r *CreateRequest) { r.ClientID = " " }, "clientId", "must not be empty"},
		{"client of 101 characters", func(r *CreateRequest) { r.ClientID = strings.Repeat("c", 101) }, "clientId", "the limit is 100"},
		{"client with a control character", func(r *CreateRequest) { r.ClientID = "c\x00" }, "clientId", "control or invisible"},
		{"client with a bidi override", func(r *CreateRequest) { r.ClientID = "shop\u202e7" }, "clientId", "U+202E"},
		{"client with a zero-width space", func(r *CreateRequest) { r.ClientID = "shop\u200b7" }, "clientId", "U+200B"},
		{"client not UTF-8", func(r *CreateRequest) { r.ClientID = "shop\xff" }, "clientId", "not valid UTF-8"},
		// What a JSON decoder leaves of invalid bytes or a lone surrogate.
		{"client with U+FFFD", func(r *CreateRequest) { r.ClientID = "shop\ufffd" }, "clientId", "not valid UTF-8"},
		{"empty token", func(r *CreateRequest) { r.PaymentMethodToken = new("") }, "paymentMethodToken", "must not be empty"},
		{"token of 256 characters", func(r *CreateRequest) { r.PaymentMethodToken = new(strings.Repeat("t", 256)) }, "paymentMethodToken", "the limit is 255"},
		{"token with a newline", func(r *CreateRequest) { r.PaymentMethodToken = new("pm_\n") }, "paymentMethodToken", "printable ASCII"},
		{"token with é", func(r *CreateRequest) { r.PaymentMethodToken = new("pm_café") }, "paymentMethodToken", "printable ASCII"},
		{"key with a leading space", func(r *CreateRequest) { r.IdempotencyKey = " k" }, "idempotencyKey", "start or end with a space"},
		{"key with a trailing space", func(r *CreateRequest) { r.IdempotencyKey = "k " }, "idempotencyKey", "start or end with a space"},
		{"method unknown", func(r *CreateRequest) { r.Method = "CASH" }, "method", "must be one of CREDIT_CARD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest()
			tt.change(&req)
			_, err := req.command()
			var invalid *InvalidInputError
			if !errors.As(err, &invalid) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("command() = %v, want an *InvalidInputError", err)
			}
			if len(invalid.Problems) != 1 {
				t.Fatalf("problems = %+v, want exactly one", invalid.Problems)
			}
			p := invalid.Problems[0]
			if p.Field != tt.wantField || !strings.Contains(p.Message, tt.wantInMessage) {
				t.Errorf("problem = %+v, want field %s and a message saying %q", p, tt.wantField, tt.wantInMessage)
			}
			// The contract: error messages never echo the request.
			sent := map[string]string{"idempotencyKey": req.IdempotencyKey, "amount": req.Amount,
				"currency": req.Currency, "clientId": req.ClientID, "method": string(req.Method)}[tt.wantField]
			if len(strings.TrimSpace(sent)) >= 3 && strings.Contains(p.Message, sent) {
				t.Errorf("message %q repeats the value sent, %q", p.Message, sent)
			}
		})
	}
}

func TestValidateAcceptsEdges(t *testing.T) {
	t.Parallel()
	tests := map[string]func(*CreateRequest){
		"key of 100 characters":    func(r *CreateRequest) { r.IdempotencyKey = strings.Repeat("k", 100) },
		"key with every printable": func(r *CreateRequest) { r.IdempotencyKey = "! !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~" },
		"key with inner spaces":    func(r *CreateRequest) { r.IdempotencyKey = "order 42 b" },
		"client of 100 characters": func(r *CreateRequest) { r.ClientID = strings.Repeat("ç", 100) },
		"lower-case currency":      func(r *CreateRequest) { r.Currency = "brl" },
		"token of 255 characters":  func(r *CreateRequest) { r.PaymentMethodToken = new(strings.Repeat("t", 255)) },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			req := validRequest()
			change(&req)
			if _, err := req.command(); err != nil {
				t.Fatalf("command() = %v, want no error", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	req := CreateRequest{Amount: "abc", Currency: "XYZ", Method: "CASH"}
	_, err := req.command()
	var invalid *InvalidInputError
	if !errors.As(err, &invalid) {
		t.Fatalf("command() = %v, want an *InvalidInputError", err)
	}
	var fields []string
	for _, p := range invalid.Problems {
		fields = append(fields, p.Field)
	}
	if got, want := strings.Join(fields, ","), "idempotencyKey,clientId,method,currency,amount"; got != want {
		t.Errorf("fields with problems = %s, want %s", got, want)
	}
}

func TestValidateNormalises(t *testing.T) {
	t.Parallel()
	req := validRequest()
	req.Amount, req.Currency = "10.5", "brl"
	cmd, err := req.command()
	if err != nil {
		t.Fatal(err)
	}
	if cmd.amount != (Money{Minor: 1050, Currency: "BRL"}) {
		t.Errorf("amount = %+v, want 1050 BRL minor units", cmd.amount)
	}
	want := Params{FieldOperation: "CREATE_PAYMENT", FieldAmount: "10.5", FieldCurrency: "BRL", FieldMethod: "PIX", FieldCapture: "true"}
	if !maps.Equal(cmd.params, want) {
		t.Errorf("params = %v, want %v", cmd.params, want)
	}
}
