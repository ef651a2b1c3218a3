package intake_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// A correctly signed event whose "created" no database holds alike (year
// 318857) is refused as malformed, on both databases: today PostgreSQL
// refuses the timestamp (SQLSTATE 22008), the route answers 500, and the
// processor retries it for days; SQLite stores it.
func TestReceiveRefusesAnEventTimeNoDatabaseHolds(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_far","type":"payment_intent.canceled","created":10000000000000,"data":{"object":{"object":"payment_intent","id":"pi_far","status":"canceled","payment_method_types":["pix"]}}}`)
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newService(t, db, &applier{})
		_, err := s.Receive(t.Context(), body, stripedouble.Sign(body, time.Now(), secret))
		if !errors.Is(err, intake.ErrRefused) {
			t.Errorf("Receive = %v, want ErrRefused", err)
		}
	})
}

// A correctly signed event whose id holds a NUL (a \u0000 escape), or whose
// body is not UTF-8, is refused as malformed on both databases: PostgreSQL
// refuses such text with an error, a 500 the processor retries for days.
func TestReceiveRefusesEventTextNoDatabaseHolds(t *testing.T) {
	t.Parallel()
	bodies := map[string][]byte{
		"NUL id":    []byte(`{"id":"evt_\u0000","type":"payment_intent.canceled","created":4,"data":{"object":{"object":"payment_intent","id":"pi_nul","status":"canceled","payment_method_types":["pix"]}}}`),
		"not UTF-8": []byte("{\"id\":\"evt_bytes\",\"type\":\"payment_intent.canceled\",\"created\":4,\"data\":{\"object\":{\"object\":\"payment_intent\",\"id\":\"pi_bytes\",\"status\":\"canceled\",\"description\":\"\xff\",\"payment_method_types\":[\"pix\"]}}}"),
	}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newService(t, db, &applier{})
		for name, body := range bodies {
			_, err := s.Receive(t.Context(), body, stripedouble.Sign(body, time.Now(), secret))
			if !errors.Is(err, intake.ErrRefused) {
				t.Errorf("%s: Receive = %v, want ErrRefused", name, err)
			}
		}
	})
}
