package payments

import (
	"testing"

	"github.com/cmpay/cmpay/processor"
)

// What recovery does next after each kind of failed call: ask again with
// the key, or read the record when asking again can only repeat the same
// answer (and, after a stored 500, send again under a new key if the
// record shows nothing done). Nothing here settles the operation.
func TestErrorOutcomeNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *processor.Error
		next string
	}{
		{"a 500, first time", &processor.Error{Kind: processor.KindServerError}, ""},
		{"a 500 Stripe replays for the key", &processor.Error{Kind: processor.KindServerError, Replayed: true}, nextStored},
		{"the key's first request had other parameters", &processor.Error{Kind: processor.KindIdempotencyMismatch}, nextRead},
		// Not stored under the key: once the operator fixes the API key,
		// asking again is what settles it.
		{"a bad API key", &processor.Error{Kind: processor.KindAuthentication}, ""},
		{"a timeout", &processor.Error{Kind: processor.KindTimeout}, ""},
		{"in progress", &processor.Error{Kind: processor.KindInProgress}, ""},
	} {
		o := errorOutcome(tc.err)
		if o.settled || o.next != tc.next {
			t.Errorf("%s: settled %v, next %q; want unsettled, next %q", tc.name, o.settled, o.next, tc.next)
		}
	}
}
