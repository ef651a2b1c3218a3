package stripe

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cmpay/cmpay/internal/stripedouble"
)

// FuzzVerifiedEventIsStorable: an event that verifies is stored as it came
// (intake's insert_event) before anything else: its id, type, payment
// reference and payload must be text PostgreSQL holds (valid UTF-8, no
// NUL) and its time one both databases hold alike, or a correctly signed
// but odd event is a database error (500) that the processor retries for
// days, where it should be refused (400) and never asked again.
func FuzzVerifiedEventIsStorable(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"payment_intent.canceled","created":4,"data":{"object":{"object":"payment_intent","id":"pi_4","status":"canceled","payment_method_types":["pix"]}}}`))
	f.Add([]byte(`{"id":"evt_\u0000","type":"payment_intent.canceled","created":4,"data":{"object":{"object":"payment_intent","id":"pi_4","status":"canceled","payment_method_types":["pix"]}}}`))
	f.Add([]byte(`{"id":"evt_2","type":"payment_intent.canceled","created":10000000000000,"data":{"object":{"object":"payment_intent","id":"pi_4","status":"canceled","payment_method_types":["pix"]}}}`))
	now := time.Unix(1_800_000_000, 0)
	storable := func(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := VerifyEvent(body, stripedouble.Sign(body, now, secret), secret, now)
		if err != nil {
			return
		}
		if !storable(ev.ID) || !storable(ev.Type) || !storable(ev.PaymentReference) || !storable(string(body)) {
			t.Fatalf("a verified event PostgreSQL cannot store: id %q type %q reference %q", ev.ID, ev.Type, ev.PaymentReference)
		}
		if y := ev.Created.Year(); y < 1 || y > 9999 {
			t.Fatalf("a verified event created at %v", ev.Created)
		}
	})
}
