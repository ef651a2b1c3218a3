// Package scalar holds the Go side of CMPay's custom GraphQL scalars.
package scalar

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// BadValueError is a value a client sent that the scalar cannot hold; the
// API answers it with BAD_USER_INPUT.
type BadValueError struct{ Message string }

func (e *BadValueError) Error() string { return e.Message }

// Decimal is the decimal text of an amount, exactly as the client wrote it
// ("10.5", "1.05e1") or as the server formats it ("10.50"). It is never a
// float: the payments package parses and validates it against the currency.
type Decimal string

// UnmarshalGQL accepts a string or a JSON number. JSON numbers arrive as
// json.Number (the transports decode with UseNumber), and number literals in
// the query text arrive as strings, rewritten before coercion by
// KeepDecimalLiterals; either way the original digits are kept.
func (d *Decimal) UnmarshalGQL(v any) error {
	switch v := v.(type) {
	case string:
		*d = Decimal(v)
	case json.Number:
		*d = Decimal(v.String())
	default:
		return &BadValueError{fmt.Sprintf("a Decimal must be a string such as \"10.50\" or a JSON number, got %s", JSONKind(v))}
	}
	return nil
}

// MarshalGQL writes the amount as a JSON string, so no client reads it
// through a float either.
func (d Decimal) MarshalGQL(w io.Writer) {
	_, _ = io.WriteString(w, strconv.Quote(string(d)))
}

// JSONKind names the JSON type a decoded value came from, in JSON's words
// ("a string", "an array"): a client is never told Go's type names.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number, float64, float32, int, int64, int32:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value of another kind"
}
