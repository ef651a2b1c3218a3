package scalar

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestUnmarshalString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      any
		want    string
		wantErr string
	}{
		{"order-12", "order-12", ""},
		{"", "", ""},
		{json.Number("12"), "", "not a number"},
		{float64(12), "", "not a number"},
		{true, "", "not a boolean"},
		{map[string]any{"a": 1}, "", "not an object"},
		{[]any{"a"}, "", "not an array"},
		{nil, "", "not null"},
	}
	for _, tt := range tests {
		got, err := UnmarshalString(tt.in)
		if tt.wantErr == "" {
			if err != nil || got != tt.want {
				t.Errorf("%#v: %q, %v; want %q", tt.in, got, err, tt.want)
			}
			continue
		}
		var bad *BadValueError
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%#v: %q, %v; want a BadValueError saying %q", tt.in, got, err, tt.wantErr)
		}
	}
}

// A client is told JSON's kinds, never Go's type names.
func TestDecimalErrorsNameJSONKinds(t *testing.T) {
	t.Parallel()
	for _, in := range []any{true, nil, map[string]any{}, []any{}, int64(5), struct{}{}} {
		var d Decimal
		err := d.UnmarshalGQL(in)
		if err == nil {
			t.Errorf("%#v was accepted", in)
			continue
		}
		for _, goWord := range []string{"int64", "struct", "map[", "[]", "interface"} {
			if strings.Contains(err.Error(), goWord) {
				t.Errorf("%#v: %q names a Go type", in, err)
			}
		}
	}
}
