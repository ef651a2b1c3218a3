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

func TestMoneySameValue(t *testing.T) {
	t.Parallel()
	brl := Money{Minor: 1050, Currency: "BRL"}
	if !brl.sameValue(Money{Minor: 1050, Currency: "USD"}) {
		t.Error("10.50 BRL and 10.50 USD should have the same value")
	}
	if brl.sameValue(Money{Minor: 1050, Currency: "JPY"}) {
		t.Error("10.50 BRL and 1050 JPY should differ")
	}
	if !brl.sameValue(Money{Minor: 10500, Currency: "BHD"}) {
		t.Error("10.50 BRL and 10.500 BHD should have the same value")
	}
}
