package payments

import (
	"errors"
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
		{"client with a control character", func(r *CreateRequest) { r.ClientID = "c\x00" }, "clientId", "control characters"},
		{"method unknown", func(r *CreateRequest) { r.Method = "CASH" }, "method", "not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest()
			tt.change(&req)
			_, err := req.validate()
			var invalid *InvalidInputError
			if !errors.As(err, &invalid) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("validate() = %v, want an *InvalidInputError", err)
			}
			if len(invalid.Problems) != 1 {
				t.Fatalf("problems = %+v, want exactly one", invalid.Problems)
			}
			p := invalid.Problems[0]
			if p.Field != tt.wantField || !strings.Contains(p.Message, tt.wantInMessage) {
				t.Errorf("problem = %+v, want field %s and a message saying %q", p, tt.wantField, tt.wantInMessage)
			}
		})
	}
}

func TestValidateAcceptsEdges(t *testing.T) {
	t.Parallel()
	tests := map[string]func(*CreateRequest){
		"key of 100 characters":       func(r *CreateRequest) { r.IdempotencyKey = strings.Repeat("k", 100) },
		"key with every printable":    func(r *CreateRequest) { r.IdempotencyKey = " !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~" },
		"key with surrounding spaces": func(r *CreateRequest) { r.IdempotencyKey = " k " },
		"client of 100 characters":    func(r *CreateRequest) { r.ClientID = strings.Repeat("ç", 100) },
		"lower-case currency":         func(r *CreateRequest) { r.Currency = "brl" },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			req := validRequest()
			change(&req)
			if _, err := req.validate(); err != nil {
				t.Fatalf("validate() = %v, want no error", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	req := CreateRequest{Amount: "abc", Currency: "XYZ", Method: "CASH"}
	_, err := req.validate()
	var invalid *InvalidInputError
	if !errors.As(err, &invalid) {
		t.Fatalf("validate() = %v, want an *InvalidInputError", err)
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
	p, err := req.validate()
	if err != nil {
		t.Fatal(err)
	}
	if p.amount != (Money{Minor: 1050, Currency: "BRL"}) {
		t.Errorf("amount = %+v, want 1050 BRL minor units", p.amount)
	}
}
