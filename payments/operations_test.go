package payments

import (
	"encoding/json"
	"testing"
)

// encodeRequest writes by hand what encoding/json writes of opRequest.
func TestEncodeRequestIsJSON(t *testing.T) {
	t.Parallel()
	for _, cmd := range []*command{
		{method: MethodPix, capture: true},
		{method: MethodCreditCard, token: "pm_card_visa"},
		{method: MethodDebitCard, token: `a "quoted" <token> & more`, capture: true},
	} {
		want, _ := json.Marshal(opRequest{Method: cmd.method, Token: cmd.token, Capture: cmd.capture})
		if got := encodeRequest(cmd); got != string(want) {
			t.Errorf("encodeRequest = %s, want %s", got, want)
		}
	}
}
