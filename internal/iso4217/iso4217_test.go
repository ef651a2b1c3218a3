package iso4217_test

import (
	"testing"

	"github.com/cmpay/cmpay/internal/iso4217"
)

func TestDigits(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{"BRL": 2, "USD": 2, "JPY": 0, "BHD": 3, "CLF": 4} {
		if got := iso4217.Digits(code); got != want || !iso4217.Valid(code) {
			t.Errorf("%s: %d digits (valid %v), want %d", code, got, iso4217.Valid(code), want)
		}
	}
	if iso4217.Valid("XXX1") || iso4217.Valid("brl") {
		t.Error("a malformed or lower-case code is valid")
	}
	all := iso4217.All()
	if len(all) < 150 || all["BRL"] != 2 || all["JPY"] != 0 {
		t.Errorf("All: %d codes, BRL %d, JPY %d; want every active code", len(all), all["BRL"], all["JPY"])
	}
}
