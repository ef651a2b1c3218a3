package stripe

import (
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
)

// FuzzDecodeEvent feeds arbitrary bodies, signed correctly, through
// VerifyEvent: it must never panic, must refuse with one of its three
// errors or decode an event with an id and a type, and must agree with
// DecodeEvent. The seed corpus is the double's events of every type.
func FuzzDecodeEvent(f *testing.F) {
	byType, _, _ := eventsOf(f)
	for _, evs := range byType {
		for _, e := range evs {
			f.Add(e.Body)
		}
	}
	f.Add([]byte(`{"id":"evt_1","type":"charge.refunded","created":1,"data":{"object":{"object":"charge","id":"ch_1","payment_intent":"pi_1","amount_refunded":5,"currency":"isk","refunds":{"data":[{"id":"re_1","object":"refund","status":"pending"}]}}}}`))
	f.Add([]byte(`{"id":"evt_2","type":"payment_intent.requires_action","created":2,"data":{"object":{"object":"payment_intent","id":"pi_2","status":"requires_action","payment_method_types":["boleto"],"next_action":{"boleto_display_details":{"number":"1","expires_at":3}}}}}`))
	f.Add([]byte(`{"id":"evt_3","type":"refund.updated","created":3,"data":{"object":{"object":"refund","id":"re_3","payment_intent":{"id":"pi_3"},"status":"failed"}}}`))
	f.Add([]byte(`{"id":"evt_4","type":"payment_intent.canceled","created":4,"data":{"object":{"object":"payment_intent","id":"pi_4","status":"canceled","payment_method_types":["pix"]}}}`))
	f.Add([]byte(`not json`))
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := VerifyEvent(body, stripedouble.Sign(body, now, secret), secret, now)
		decoded, derr := DecodeEvent(body)
		switch {
		case err != nil && !errors.Is(err, ErrEventMalformed):
			t.Fatalf("a correctly signed body refused for another reason: %v", err)
		case (err == nil) != (derr == nil):
			t.Fatalf("VerifyEvent %v, DecodeEvent %v", err, derr)
		case err == nil && (ev.ID == "" || ev.Type == "" || ev.ID != decoded.ID):
			t.Fatalf("decoded without id or type: %+v", ev)
		case err == nil && ev.Payment != nil && ev.Payment.Reference == "":
			t.Fatalf("a payment without a reference: %+v", ev.Payment)
		}
	})
}
