package payments

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/cmpay/cmpay/internal/iso4217"
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
// ("brl" → "BRL"). The list of codes and their minor-unit digits is
// package iso4217's, which the database's copy is written from too.
func NormalizeCurrency(code string) (string, error) {
	if len(code) != 3 {
		return "", fmt.Errorf("currency must be a three-letter ISO 4217 code such as \"BRL\"")
	}
	upper := strings.ToUpper(code)
	if !iso4217.Valid(upper) {
		return "", fmt.Errorf("currency is not an active ISO 4217 currency code")
	}
	return upper, nil
}

// currencyDigits returns the number of minor-unit digits of a normalised
// code: 2 for BRL, 0 for JPY, 3 for BHD.
func currencyDigits(code string) int32 {
	return int32(iso4217.Digits(code))
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
	minor, err := toMinor(d, currencyDigits(currencyCode), currencyCode)
	if err != nil {
		return Money{}, err
	}
	return Money{Minor: minor, Currency: currencyCode}, nil
}

// toMinor converts a reduced decimal to minor units of a currency with the
// given digits, refusing what is not a whole number of them or does not
// fit in an int64. code is for the messages, which do not repeat the
// amount sent: no message echoes a request's values.
func toMinor(d *apd.Decimal, digits int32, code string) (int64, error) {
	if -d.Exponent > digits {
		return 0, fmt.Errorf("amount has %d fraction digits; %s allows %d", -d.Exponent, code, digits)
	}
	// d is reduced, so its digit count plus exponent is the number of
	// integer digits; refusing more than int64 holds before converting keeps
	// inputs like "1e999999" from allocating huge numbers.
	var minor apd.Decimal
	minor.Set(d)
	minor.Exponent += digits
	if minor.NumDigits()+int64(minor.Exponent) > maxMinorDigits {
		return 0, fmt.Errorf("amount is larger than can be stored exactly")
	}
	n, err := minor.Int64()
	if err != nil {
		return 0, fmt.Errorf("amount is larger than can be stored exactly")
	}
	return n, nil
}

// maxCurrencyDigits is the most minor-unit digits any currency has (4: CLF,
// UYW). An amount with more fraction digits fits no currency.
var maxCurrencyDigits = func() int32 {
	most := int32(0)
	for _, digits := range iso4217.All() {
		most = max(most, int32(digits))
	}
	return most
}()

// changeAmount is the amount of a capture or refund, which a request gives
// without a currency: the currency is the payment's, known only once the
// payment is read. It holds the amount as canonical text and in minor units
// for every number of currency digits, so that the statement that reads the
// payment picks the right one without a second round trip.
type changeAmount struct {
	canonical string       // reduced decimal: "10.5" for "10.50"
	value     *apd.Decimal // reduced
	// byDigits[d] is the amount in minor units of a currency with d
	// digits, or nil when it is no whole number of them or does not fit.
	byDigits []*int64
}

// parseChangeAmount reads a capture's or refund's amount. It refuses what
// fits no currency at all; whether it fits the payment's is known later.
func parseChangeAmount(text string) (changeAmount, error) {
	d, err := parseDecimal(text)
	if err != nil {
		return changeAmount{}, err
	}
	a := changeAmount{canonical: d.Text('f'), value: d, byDigits: make([]*int64, maxCurrencyDigits+1)}
	// The messages are written only for an amount that fits no currency:
	// every capture or refund with an amount runs this loop.
	for digits := range maxCurrencyDigits + 1 {
		if n, err := toMinor(d, digits, ""); err == nil {
			a.byDigits[digits] = &n
		}
	}
	if slices.IndexFunc(a.byDigits, func(n *int64) bool { return n != nil }) < 0 {
		// Either too many fraction digits for any currency, or too large
		// for every one: the try with the most digits says which.
		_, err := toMinor(d, maxCurrencyDigits, fmt.Sprintf("a currency with %d digits", maxCurrencyDigits))
		return changeAmount{}, err
	}
	return a, nil
}

// in is the amount in minor units of the currency, or why it is not one.
func (a changeAmount) in(code string) (Money, error) {
	digits := currencyDigits(code)
	if n := a.byDigits[digits]; n != nil {
		return Money{Minor: *n, Currency: code}, nil
	}
	_, err := toMinor(a.value, digits, code)
	return Money{}, err
}

// canonical is the currency-independent text of an amount: its reduced
// decimal value ("10.5" for 10.50 BRL). Amounts are compared by value, so
// 10.50 BRL and 10.5 USD have the same amount and differ in currency.
func (m Money) canonical() string {
	var d apd.Decimal
	d.Reduce(apd.New(m.Minor, -currencyDigits(m.Currency)))
	return d.Text('f')
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
	if !decimalSyntax(text) {
		return nil, fmt.Errorf("amount is not a decimal number; send it like \"10.50\"")
	}
	d, _, err := apd.NewFromString(text)
	if err != nil || d.Form != apd.Finite {
		return nil, fmt.Errorf("amount is not a decimal number; send it like \"10.50\"")
	}
	if d.Sign() <= 0 {
		return nil, fmt.Errorf("amount must be greater than zero")
	}
	var reduced apd.Decimal
	reduced.Reduce(d)
	return &reduced, nil
}

// decimalSyntax reports whether text is a decimal number as people write
// one: an optional sign, digits with at most one decimal point (at least
// one digit), and an optional exponent (e or E, an optional sign, digits).
// apd's parser takes more, and gets some of it wrong: ".+5" is 0.05 to it,
// and ".-10" a number with a negative coefficient (found by fuzzing).
func decimalSyntax(text string) bool {
	i := 0
	if i < len(text) && (text[i] == '+' || text[i] == '-') {
		i++
	}
	digits, point := 0, false
	for ; i < len(text); i++ {
		if c := text[i]; c >= '0' && c <= '9' {
			digits++
		} else if c == '.' && !point {
			point = true
		} else {
			break
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(text) {
		return true
	}
	if text[i] != 'e' && text[i] != 'E' {
		return false
	}
	i++
	if i < len(text) && (text[i] == '+' || text[i] == '-') {
		i++
	}
	if i == len(text) {
		return false
	}
	for ; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return false
		}
	}
	return true
}

// String prints the amount with exactly the currency's minor-unit digits:
// "10.50" for BRL, "1000" for JPY.
func (m Money) String() string {
	return apd.New(m.Minor, -currencyDigits(m.Currency)).Text('f')
}
