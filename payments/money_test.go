package payments

import (
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, currency string
		wantMinor      int64
		wantString     string
	}{
		{"10.5", "BRL", 1050, "10.50"},
		{"10.50", "BRL", 1050, "10.50"},
		{"10.500000", "BRL", 1050, "10.50"},
		{"1.05e1", "BRL", 1050, "10.50"},
		{"1050E-2", "BRL", 1050, "10.50"},
		{"0.01", "BRL", 1, "0.01"},
		{".5", "USD", 50, "0.50"},
		{"+7", "USD", 700, "7.00"},
		{"1000", "JPY", 1000, "1000"},
		{"1000.000", "JPY", 1000, "1000"},
		{"1e3", "JPY", 1000, "1000"},
		{"1.234", "BHD", 1234, "1.234"},
		{"0.0001", "CLF", 1, "0.0001"},
		{"00012.3400", "EUR", 1234, "12.34"},
		{"92233720368547758.07", "BRL", 9223372036854775807, "92233720368547758.07"},
		{"9223372036854775807", "JPY", 9223372036854775807, "9223372036854775807"},
	}
	for _, tt := range tests {
		t.Run(tt.text+" "+tt.currency, func(t *testing.T) {
			m, err := ParseAmount(tt.text, tt.currency)
			if err != nil {
				t.Fatalf("ParseAmount(%q, %s): %v", tt.text, tt.currency, err)
			}
			if m.Minor != tt.wantMinor || m.Currency != tt.currency {
				t.Errorf("ParseAmount(%q, %s) = %+v, want %d minor units", tt.text, tt.currency, m, tt.wantMinor)
			}
			if got := m.String(); got != tt.wantString {
				t.Errorf("String() = %q, want %q", got, tt.wantString)
			}
		})
	}
}

func TestParseAmountRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, currency, wantInMessage string
	}{
		{"", "BRL", "must not be empty"},
		{"abc", "BRL", "not a decimal number"},
		{"10,50", "BRL", "not a decimal number"},
		{"1_000", "BRL", "not a decimal number"},
		{"0x10", "BRL", "not a decimal number"},
		{" 10", "BRL", "not a decimal number"},
		{"10 ", "BRL", "not a decimal number"},
		{"NaN", "BRL", "not a decimal number"},
		{"Infinity", "BRL", "not a decimal number"},
		{"-Inf", "BRL", "not a decimal number"},
		{"1e", "BRL", "not a decimal number"},
		// apd's own parser takes these: 0.05, and a negative coefficient.
		{".+5", "BRL", "not a decimal number"},
		{".-10", "BRL", "not a decimal number"},
		{"+.+5", "BRL", "not a decimal number"},
		{"1..2", "BRL", "not a decimal number"},
		{".", "BRL", "not a decimal number"},
		{"+", "BRL", "not a decimal number"},
		{"1e+", "BRL", "not a decimal number"},
		{"e5", "BRL", "not a decimal number"},
		{"1e5.5", "BRL", "not a decimal number"},
		{"0", "BRL", "greater than zero"},
		{"0.00", "BRL", "greater than zero"},
		{"-0", "BRL", "greater than zero"},
		{"-10.50", "BRL", "greater than zero"},
		{"10.505", "BRL", "fraction digits"},
		{"10.5", "JPY", "fraction digits"},
		{"0.00001", "CLF", "fraction digits"},
		{"1e-3", "USD", "fraction digits"},
		{"92233720368547758.08", "BRL", "larger than can be stored"},
		{"9223372036854775808", "JPY", "larger than can be stored"},
		{"1e19", "JPY", "larger than can be stored"},
		{"1e99999", "BRL", "larger than can be stored"},
		{"1e999999", "BRL", "not a decimal number"},
		{"1e99999999999", "BRL", "not a decimal number"},
		{strings.Repeat("1", 101), "BRL", "the limit is 100"},
	}
	for _, tt := range tests {
		t.Run(tt.text+" "+tt.currency, func(t *testing.T) {
			m, err := ParseAmount(tt.text, tt.currency)
			if err == nil {
				t.Fatalf("ParseAmount(%q, %s) = %+v, want an error", tt.text, tt.currency, m)
			}
			if !strings.Contains(err.Error(), tt.wantInMessage) {
				t.Errorf("ParseAmount(%q, %s) error %q, want it to say %q", tt.text, tt.currency, err, tt.wantInMessage)
			}
		})
	}
}

func TestNormalizeCurrency(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"BRL": "BRL", "brl": "BRL", "Brl": "BRL", "jpy": "JPY", "CLF": "CLF"} {
		if got, err := NormalizeCurrency(in); err != nil || got != want {
			t.Errorf("NormalizeCurrency(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// Not codes, withdrawn codes, and ISO codes that are not currencies
	// (no minor unit: gold, testing, "no currency").
	for _, in := range []string{"", "BR", "BRLL", " BRL", "ABC", "HRK", "XAU", "XTS", "XXX", "986", "R$"} {
		if got, err := NormalizeCurrency(in); err == nil {
			t.Errorf("NormalizeCurrency(%q) = %q, want an error", in, got)
		}
	}
}

// The canonical amount is the value, whatever the currency's digits: the
// same text for the same value, so comparing amounts is comparing text.
func TestMoneyCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m    Money
		want string
	}{
		{Money{Minor: 1050, Currency: "BRL"}, "10.5"},
		{Money{Minor: 1050, Currency: "USD"}, "10.5"},
		{Money{Minor: 10500, Currency: "BHD"}, "10.5"},
		{Money{Minor: 1050, Currency: "JPY"}, "1050"},
		{Money{Minor: 100000, Currency: "JPY"}, "100000"},
		{Money{Minor: 1, Currency: "CLF"}, "0.0001"},
	}
	for _, tt := range tests {
		if got := tt.m.canonical(); got != tt.want {
			t.Errorf("%+v.canonical() = %q, want %q", tt.m, got, tt.want)
		}
	}
}

// A capture's or refund's amount comes without a currency: it is kept for
// every number of digits, and refused only when it fits no currency.
func TestParseChangeAmount(t *testing.T) {
	t.Parallel()
	a, err := parseChangeAmount("10.50")
	if err != nil {
		t.Fatal(err)
	}
	if a.canonical != "10.5" {
		t.Errorf("canonical = %q, want 10.5", a.canonical)
	}
	for code, want := range map[string]int64{"BRL": 1050, "BHD": 10500, "CLF": 105000} {
		if m, err := a.in(code); err != nil || m.Minor != want {
			t.Errorf("in(%s) = %+v, %v; want %d", code, m, err, want)
		}
	}
	if _, err := a.in("JPY"); err == nil || !strings.Contains(err.Error(), "JPY allows 0") {
		t.Errorf("in(JPY) = %v, want a fraction-digits error", err)
	}
	for _, bad := range []string{"", "0", "-1", "ten", "1.00001", "1e30"} {
		if _, err := parseChangeAmount(bad); err == nil {
			t.Errorf("parseChangeAmount(%q) succeeded, want an error", bad)
		}
	}
}
