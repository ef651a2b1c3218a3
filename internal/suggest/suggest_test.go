package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	fields := []string{"clientId", "amount", "currency", "method", "capture"}
	for _, c := range []struct {
		input string
		want  []string
	}{
		{"amuont", []string{"amount"}},
		{"Amount", []string{"amount"}},
		{"curency", []string{"currency"}},
		{"client_id", []string{"clientId"}},
		{"zzzzzzz", nil},
		{"", nil},
	} {
		if got := Closest(c.input, fields); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.input, got, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	if got, want := DidYouMean("amuont", []string{"clientId", "amount"}), ` Did you mean "amount"?`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := DidYouMean("nothing-like-it", []string{"amount"}); got != "" {
		t.Errorf("got %q for a name close to none", got)
	}
}

func TestCaseOnly(t *testing.T) {
	methods := []string{"CREDIT_CARD", "DEBIT_CARD", "PIX", "BOLETO"}
	if got, ok := CaseOnly("pix", methods); !ok || got != "PIX" {
		t.Errorf("CaseOnly(pix) = %q, %v", got, ok)
	}
	if got, ok := CaseOnly("Credit_Card", methods); !ok || got != "CREDIT_CARD" {
		t.Errorf("CaseOnly(Credit_Card) = %q, %v", got, ok)
	}
	for _, in := range []string{"PIX", "PIKS", ""} {
		if got, ok := CaseOnly(in, methods); ok {
			t.Errorf("CaseOnly(%q) = %q, want none", in, got)
		}
	}
}
