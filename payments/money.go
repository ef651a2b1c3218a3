package payments

import (
	"fmt"
	"strings"

	"github.com/bojanz/currency"
	"github.com/cockroachdb/apd/v3"
)

// Money is an exact amount in one currency, held as an integer count of the
// currency's minor units (1050 BRL minor units is 10.50 BRL). Amounts never
// pass through binary floating point: they are parsed from decimal text and
// printed from integers.
type Money struct {
	Minor    int64
	Currency string // ISO 4217 alphabetic code, upper case
}

// maxAmountTextLen bounds the decimal text we are willing to parse; no real
// amount needs more, and it keeps pathological inputs cheap to refuse.
const maxAmountTextLen = 100

// maxMinorDigits is the number of decimal digits of the largest int64, the
// type minor units are stored as (BIGINT on PostgreSQL, INTEGER on SQLite).
const maxMinorDigits = 19

// NormalizeCurrency returns the upper-case form of an active ISO 4217 code
// ("brl" → "BRL"). The list of codes and their minor-unit digits comes from
// github.com/bojanz/currency, which builds it from ISO's own list of active
// currencies.
func NormalizeCurrency(code string) (string, error) {
	if len(code) != 3 {
		return "", fmt.Errorf("currency must be a three-letter ISO 4217 code such as \"BRL\", got %q", code)
	}
	upper := strings.ToUpper(code)
	if !currency.IsValid(upper) {
		return "", fmt.Errorf("currency %q is not an active ISO 4217 currency code", code)
	}
	return upper, nil
}

// currencyDigits returns the number of minor-unit digits of a normalised
// code: 2 for BRL, 0 for JPY, 3 for BHD.
func currencyDigits(code string) int32 {
	digits, _ := currency.GetDigits(code)
	return int32(digits)
}

// ParseAmount reads a positive decimal amount ("10.5", "10.50", "1e1") in a
// normalised currency. Trailing zeros do not count as fraction digits, so
// "10.50" and "10.5" are the same BRL amount; "10.505" BRL is refused rather
// than rounded.
func ParseAmount(text, currencyCode string) (Money, error) {
	d, err := parseDecimal(text)
	if err != nil {
		return Money{}, err
	}
	digits := currencyDigits(currencyCode)
	if -d.Exponent > digits {
		return Money{}, fmt.Errorf("amount %s has %d fraction digits; %s allows %d", text, -d.Exponent, currencyCode, digits)
	}
	// d is reduced, so its digit count plus exponent is the number of
	// integer digits; refusing more than int64 holds before converting keeps
	// inputs like "1e999999" from allocating huge numbers.
	var minor apd.Decimal
	minor.Set(d)
	minor.Exponent += digits
	if minor.NumDigits()+int64(minor.Exponent) > maxMinorDigits {
		return Money{}, fmt.Errorf("amount %s is larger than can be stored exactly", text)
	}
	n, err := minor.Int64()
	if err != nil {
		return Money{}, fmt.Errorf("amount %s is larger than can be stored exactly", text)
	}
	return Money{Minor: n, Currency: currencyCode}, nil
}

// parseDecimal parses text as a finite, positive decimal number and returns
// it reduced (trailing zeros removed: 10.50 → 10.5, 1000 → 1E+3).
func parseDecimal(text string) (*apd.Decimal, error) {
	if text == "" {
		return nil, fmt.Errorf("amount must not be empty")
	}
	if len(text) > maxAmountTextLen {
		return nil, fmt.Errorf("amount is %d characters long; the limit is %d", len(text), maxAmountTextLen)
	}
	d, _, err := apd.NewFromString(text)
	if err != nil || d.Form != apd.Finite {
		return nil, fmt.Errorf("amount %q is not a decimal number; send it like \"10.50\"", text)
	}
	if d.Sign() <= 0 {
		return nil, fmt.Errorf("amount %s must be greater than zero", text)
	}
	var reduced apd.Decimal
	reduced.Reduce(d)
	return &reduced, nil
}

// String prints the amount with exactly the currency's minor-unit digits:
// "10.50" for BRL, "1000" for JPY.
func (m Money) String() string {
	return apd.New(m.Minor, -currencyDigits(m.Currency)).Text('f')
}

// sameValue reports whether two amounts, perhaps in different currencies,
// have the same numeric value (10.50 BRL and 10.5 USD do; 1050 JPY and
// 10.50 BRL do not).
func (m Money) sameValue(o Money) bool {
	a := apd.New(m.Minor, -currencyDigits(m.Currency))
	b := apd.New(o.Minor, -currencyDigits(o.Currency))
	return a.Cmp(b) == 0
}
