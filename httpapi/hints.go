package httpapi

import (
	"errors"

	"github.com/cmpay/cmpay/internal/suggest"
	"github.com/cmpay/cmpay/payments"
)

// hintMethod adds to the payments package's refusal of a method that
// values are case-sensitive, and names the value meant when the one sent
// differs only in case ("pix" for PIX): the REST body takes the method as
// a plain string, where GraphQL's enum would have said so.
func hintMethod(err error, method string) error {
	var invalid *payments.InvalidInputError
	if !errors.As(err, &invalid) {
		return err
	}
	names := make([]string, len(payments.Methods))
	for i, m := range payments.Methods {
		names[i] = string(m)
	}
	for i, p := range invalid.Problems {
		if p.Field != "method" {
			continue
		}
		if meant, ok := suggest.CaseOnly(method, names); ok {
			invalid.Problems[i].Message += " (values are case-sensitive: did you mean " + meant + "?)"
		} else {
			invalid.Problems[i].Message += " (values are case-sensitive)"
		}
	}
	return err
}
