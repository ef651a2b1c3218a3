package stripe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"
)

// The ways an event posted to CMPay is refused (each answers 400 and
// changes nothing). Errors from VerifyEvent wrap one of them.
var (
	ErrEventSignature = errors.New("stripe event: signature does not verify")
	ErrEventTimestamp = errors.New("stripe event: timestamp outside the tolerance")
	ErrEventMalformed = errors.New("stripe event: malformed")
)

// EventTolerance is how far an event's signed timestamp may be from now,
// either way.
const EventTolerance = 300 * time.Second

// VerifyEvent checks the Stripe-Signature header of a posted event
// against the whsec_ secret (stripe-go's webhook package: HMAC-SHA256 over
// "<t>.<body>", any of the header's v1 signatures) and that its timestamp
// is within EventTolerance of now, either way (the package only refuses
// old ones, and reads the system clock), then decodes it.
//
// The event's api_version is not checked against stripe-go's: only fields
// that every recent version shares are read (ids, status, amounts,
// metadata, next_action), and an account's webhook endpoint may be pinned
// to another version.
func VerifyEvent(payload []byte, header, secret string, now time.Time) (processor.Event, error) {
	if err := webhook.ValidatePayloadIgnoringTolerance(payload, header, secret); err != nil {
		return processor.Event{}, fmt.Errorf("%w: %w", ErrEventSignature, err)
	}
	t, err := signedAt(header)
	if err != nil {
		return processor.Event{}, fmt.Errorf("%w: %w", ErrEventSignature, err)
	}
	if d := now.Sub(t); d > EventTolerance || d < -EventTolerance {
		when := d.Round(time.Second).String() + " ago"
		if d < 0 {
			when = (-d).Round(time.Second).String() + " ahead of this server's clock"
		}
		return processor.Event{}, fmt.Errorf("%w: signed at %s, %s; the limit is %s either way",
			ErrEventTimestamp, t.UTC().Format(time.RFC3339), when, EventTolerance)
	}
	return DecodeEvent(payload)
}

// signedAt reads the one t= element of a Stripe-Signature header. A
// header with two is refused: stripe-go checks the signature against the
// last one, and the tolerance checked here against another would let an
// old event through under a fresh timestamp.
func signedAt(header string) (time.Time, error) {
	var at []string
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			at = append(at, v)
		}
	}
	if len(at) != 1 {
		return time.Time{}, fmt.Errorf("%d timestamps, want one", len(at))
	}
	n, err := strconv.ParseInt(at[0], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q", at[0])
	}
	return time.Unix(n, 0), nil
}

// DecodeEvent decodes a verified event's body. The payment_intent.*,
// charge.* and refund.* events carry their object, mapped to the seam's
// types (a charge.* event by its object's type: decodeChargeFamily); other
// types decode with only their ID, Type and Created.
func DecodeEvent(payload []byte) (processor.Event, error) {
	if !storable.Text(string(payload)) {
		// encoding/json takes bytes that are not UTF-8 inside strings, but
		// intake stores the payload as text, which PostgreSQL refuses.
		return processor.Event{}, fmt.Errorf("%w: the body is not UTF-8 text", ErrEventMalformed)
	}
	var raw stripeapi.Event
	if err := json.Unmarshal(payload, &raw); err != nil {
		return processor.Event{}, fmt.Errorf("%w: %w", ErrEventMalformed, err)
	}
	if raw.ID == "" || raw.Type == "" || raw.Created <= 0 || raw.Data == nil || len(raw.Data.Raw) == 0 {
		return processor.Event{}, fmt.Errorf("%w: id, type, created and data.object are required", ErrEventMalformed)
	}
	if !storable.Time(unix(raw.Created)) { // PostgreSQL would refuse it: a 500 the processor retries for days
		return processor.Event{}, fmt.Errorf("%w: created %d is after year 9999", ErrEventMalformed, raw.Created)
	}
	ev := processor.Event{ID: raw.ID, Type: string(raw.Type), Created: unix(raw.Created)}
	kind, _, _ := strings.Cut(ev.Type, ".")
	var err error
	switch kind {
	case "payment_intent":
		var pi stripeapi.PaymentIntent
		if err = decodeObject(raw.Data.Raw, "payment_intent", &pi); err == nil {
			p := paymentFrom(&pi)
			ev.Payment, ev.PaymentReference = &p, pi.ID
		}
	case "refund":
		err = decodeRefund(&ev, raw.Data.Raw)
	case "charge":
		err = decodeChargeFamily(&ev, raw.Data.Raw)
	}
	if err != nil {
		return processor.Event{}, err
	}
	if !storable.Text(ev.ID) || !storable.Text(ev.Type) || !storable.Text(ev.PaymentReference) {
		// A \u0000 escape decodes to NUL, which PostgreSQL refuses in the
		// text columns intake stores these in.
		return processor.Event{}, fmt.Errorf("%w: a NUL character in the event's id, type or object id", ErrEventMalformed)
	}
	return ev, nil
}

// decodeChargeFamily decodes a charge.* event by its object's type, since
// the family carries more than charges: charge.refund.updated a refund,
// charge.dispute.* a dispute. A refund decodes as a refund.* event's does;
// an object of another type is accepted as Other, with the payment it
// names when it names one, so that it is stored and applied as nothing:
// refusing a validly signed event makes Stripe send it again for days and
// may get the endpoint disabled, which would stop the events CMPay uses.
func decodeChargeFamily(ev *processor.Event, raw json.RawMessage) error {
	var head struct {
		ID, Object    string
		PaymentIntent json.RawMessage `json:"payment_intent"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%w: data.object: %w", ErrEventMalformed, err)
	}
	switch head.Object {
	case "charge":
		var ch stripeapi.Charge
		if err := decodeObject(raw, "charge", &ch); err != nil {
			return err
		}
		decodeCharge(ev, &ch)
	case "refund":
		return decodeRefund(ev, raw)
	default:
		if head.ID == "" {
			return fmt.Errorf("%w: data.object must have an id", ErrEventMalformed)
		}
		ev.Other, ev.PaymentReference = true, expandableID(head.PaymentIntent)
	}
	return nil
}

// decodeRefund decodes a refund object into ev, with the payment it
// refunds: a refund.* event's, or a charge.refund.updated's.
func decodeRefund(ev *processor.Event, raw json.RawMessage) error {
	var re stripeapi.Refund
	if err := decodeObject(raw, "refund", &re); err != nil {
		return err
	}
	r := refundFrom(&re)
	ev.Refund, ev.PaymentReference = &r, r.PaymentReference
	return nil
}

// expandableID is the id of a field Stripe gives either as an id or,
// expanded, as the object itself; "" for anything else.
func expandableID(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct{ ID string }
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

// decodeObject decodes data.object, which must be of the named object type
// and have an id.
func decodeObject(raw json.RawMessage, object string, v any) error {
	var head struct{ ID, Object string }
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%w: data.object: %w", ErrEventMalformed, err)
	}
	if head.ID == "" || head.Object != object {
		return fmt.Errorf("%w: data.object must be a %s with an id", ErrEventMalformed, object)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: data.object: %w", ErrEventMalformed, err)
	}
	return nil
}

func decodeCharge(ev *processor.Event, ch *stripeapi.Charge) {
	cur := strings.ToUpper(string(ch.Currency))
	ev.RefundedMinor = fromStripeAmount(ch.AmountRefunded, cur)
	if ch.PaymentIntent != nil {
		ev.PaymentReference = ch.PaymentIntent.ID
	}
	if ch.Refunds != nil {
		for _, re := range ch.Refunds.Data {
			r := refundFrom(re)
			if r.PaymentReference == "" {
				r.PaymentReference = ev.PaymentReference
			}
			ev.Refunds = append(ev.Refunds, r)
		}
	}
}
