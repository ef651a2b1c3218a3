// Package iso4217 is the list of active ISO 4217 currencies CMPay accepts,
// with each one's minor-unit digits. The payments engine validates and
// converts amounts by it, and the database keeps a copy of it (its
// currencies table) for the statements that convert amounts in SQL: both
// read it here, so that they cannot disagree, and storage needs no import
// of the payments package for it.
//
// The data comes from github.com/bojanz/currency, which builds it from
// ISO's own list of active currencies.
package iso4217

import "github.com/bojanz/currency"

// Valid reports whether code is an active ISO 4217 code, in upper case.
func Valid(code string) bool { return currency.IsValid(code) }

// Digits returns the number of minor-unit digits of an active code: 2 for
// BRL, 0 for JPY, 3 for BHD; 0 for a code that is not one.
func Digits(code string) int {
	digits, _ := currency.GetDigits(code)
	return int(digits)
}

// All lists every active code with its minor-unit digits.
func All() map[string]int {
	out := map[string]int{}
	for _, code := range currency.GetCurrencyCodes() {
		out[code] = Digits(code)
	}
	return out
}
