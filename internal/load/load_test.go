package load

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The hand-built body must be the JSON a client library would send.
func TestBodyIsTheRequestAsJSON(t *testing.T) {
	for _, tt := range []struct{ key, amount string }{
		{"run-1-seed-0", "10.00"},
		{`a "quoted" \\ key`, "99.99"},
	} {
		var got map[string]any
		if err := json.Unmarshal(body(tt.key, tt.amount), &got); err != nil {
			t.Fatalf("body(%q) is not JSON: %v", tt.key, err)
		}
		want := map[string]any{
			"query": mutation,
			"variables": map[string]any{
				"key": tt.key,
				"in":  map[string]any{"clientId": "load", "amount": tt.amount, "currency": "BRL", "method": "PIX"},
			},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body(%q) = %v, want %v", tt.key, got, want)
		}
	}
}
