package payments

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on what a client may send.
const (
	MaxKeyLen      = 100
	MaxClientIDLen = 100
)

// CreateRequest is a request to create a payment, as a transport received
// it. Amount is decimal text ("10.5", "10.50", "1e1"): transports pass the
// digits the client sent, never a float.
type CreateRequest struct {
	ClientID       string
	Amount         string
	Currency       string
	Method         Method
	IdempotencyKey string
	// Transport names the API the request came through; it is recorded
	// with the attempt.
	Transport string
}

// payload is a validated request with its values normalised: the currency
// upper-cased, the amount an exact count of minor units.
type payload struct {
	clientID string
	key      string
	amount   Money
	method   Method
}

// validate checks every field and reports all problems at once.
func (r CreateRequest) validate() (payload, error) {
	var problems []Problem
	add := func(field string, err error) {
		if err != nil {
			problems = append(problems, Problem{Field: field, Message: err.Error()})
		}
	}

	add("idempotencyKey", ValidateKey(r.IdempotencyKey))
	add("clientId", validateClientID(r.ClientID))
	add("method", validateMethod(r.Method))

	var amount Money
	code, err := NormalizeCurrency(r.Currency)
	add("currency", err)
	if err == nil {
		amount, err = ParseAmount(r.Amount, code)
		add("amount", err)
	} else {
		// Without a currency the digits can't be checked, but a malformed
		// number is still worth reporting in the same response.
		_, err = parseDecimal(r.Amount)
		add("amount", err)
	}

	if len(problems) > 0 {
		return payload{}, &InvalidInputError{Problems: problems}
	}
	return payload{clientID: r.ClientID, key: r.IdempotencyKey, amount: amount, method: r.Method}, nil
}

// ValidateKey checks an idempotency key: 1 to 100 printable ASCII
// characters (0x20–0x7E), not only spaces. Keys are compared exactly as
// sent; nothing is trimmed.
func ValidateKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("idempotencyKey must not be empty or only whitespace")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			r, _ := utf8.DecodeRuneInString(key[i:])
			return fmt.Errorf("idempotencyKey may contain only printable ASCII characters (0x20-0x7E); found %U at byte %d", r, i)
		}
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("idempotencyKey is %d characters long; the limit is %d", len(key), MaxKeyLen)
	}
	return nil
}

func validateClientID(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("clientId must not be empty")
	}
	if n := utf8.RuneCountInString(id); n > MaxClientIDLen {
		return fmt.Errorf("clientId is %d characters long; the limit is %d", n, MaxClientIDLen)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("clientId is not valid UTF-8")
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return fmt.Errorf("clientId must not contain control characters; found one at byte %d", i)
	}
	return nil
}

func validateMethod(m Method) error {
	if !m.Valid() {
		names := make([]string, len(Methods))
		for i, known := range Methods {
			names[i] = string(known)
		}
		return fmt.Errorf("method %q is not one of %s", string(m), strings.Join(names, ", "))
	}
	return nil
}
