package stripe

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

const secret = "whsec_test_secret"

// eventsOf runs a life through the double and returns its events by type.
func eventsOf(t testing.TB) (map[string][]stripedouble.Event, *stripedouble.Double, *stripedouble.ManualClock) {
	conn, d, clock := setup(t, stripedouble.Options{RefundsPending: true})
	ctx := context.Background()
	p, _ := conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	r, _ := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_2", PaymentReference: p.Reference, RefundID: "ref_1", AmountMinor: 300, Currency: "BRL"})
	if err := d.SettleRefund(r.Reference, true, ""); err != nil {
		t.Fatal(err)
	}
	_, _ = conn.CreatePayment(ctx, cardReq("cmpay_3", "pay_3", "pm_card_chargeDeclinedInsufficientFunds", true))
	a, _ := conn.CreatePayment(ctx, cardReq("cmpay_4", "pay_4", "pm_card_visa", false))
	_, _ = conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_5", Reference: a.Reference})
	pix, _ := conn.CreatePayment(ctx, processor.CreatePaymentRequest{IdempotencyKey: "cmpay_6", PaymentID: "pay_6",
		AmountMinor: 990, Currency: "BRL", Method: processor.MethodPix, Capture: true})
	_ = d.Expire(pix.Reference)
	byType := map[string][]stripedouble.Event{}
	for _, e := range d.Events() {
		byType[e.Type] = append(byType[e.Type], e)
	}
	return byType, d, clock
}

func verify(t *testing.T, d *stripedouble.Double, e stripedouble.Event, at, now time.Time) (processor.Event, error) {
	t.Helper()
	return VerifyEvent(e.Body, stripedouble.Sign(e.Body, at, secret), secret, now)
}

// Each event type the contract names decodes into the seam's types.
func TestDecodeEachEventType(t *testing.T) {
	byType, d, clock := eventsOf(t)
	now := clock.Now()
	check := func(typ string, i int, f func(ev processor.Event) bool) {
		t.Helper()
		if len(byType[typ]) <= i {
			t.Fatalf("no %s event %d", typ, i)
		}
		e := byType[typ][i]
		ev, err := verify(t, d, e, now, now)
		if err != nil || ev.ID != e.ID || ev.Type != typ || !ev.Created.Equal(e.Created.Truncate(time.Second)) || ev.PaymentReference == "" || !f(ev) {
			t.Errorf("%s: %+v %v", typ, ev, err)
		}
	}
	check("payment_intent.succeeded", 0, func(ev processor.Event) bool {
		return ev.Payment.State == processor.PaymentCaptured && ev.Payment.CapturedMinor == 1050 && ev.Payment.PaymentID == "pay_1"
	})
	check("payment_intent.payment_failed", 0, func(ev processor.Event) bool {
		return ev.Payment.State == processor.PaymentDeclined && ev.Payment.DeclineCode == "insufficient_funds"
	})
	check("payment_intent.payment_failed", 1, func(ev processor.Event) bool {
		return ev.Payment.State == processor.PaymentExpired && ev.Payment.PaymentID == "pay_6"
	})
	check("payment_intent.canceled", 0, func(ev processor.Event) bool { return ev.Payment.State == processor.PaymentCanceled })
	check("refund.updated", 0, func(ev processor.Event) bool {
		return ev.Refund.State == processor.RefundSucceeded && ev.Refund.RefundID == "ref_1" && ev.Refund.AmountMinor == 300
	})
	check("charge.refunded", 0, func(ev processor.Event) bool {
		return ev.RefundedMinor == 300 && len(ev.Refunds) == 1 && ev.Refunds[0].RefundID == "ref_1"
	})
}

// Anything but a good signature within 300 s, either way, is refused.
func TestVerifyRefuses(t *testing.T) {
	byType, d, clock := eventsOf(t)
	e := byType["payment_intent.succeeded"][0]
	now := clock.Now()
	for name, tc := range map[string]struct {
		header string
		want   error
	}{
		"no header":      {"", ErrEventSignature},
		"wrong secret":   {stripedouble.Sign(e.Body, now, "whsec_other"), ErrEventSignature},
		"other body":     {stripedouble.Sign(append([]byte(" "), e.Body...), now, secret), ErrEventSignature},
		"no v1":          {"t=" + strconv.FormatInt(now.Unix(), 10), ErrEventSignature},
		"old":            {stripedouble.Sign(e.Body, now.Add(-301*time.Second), secret), ErrEventTimestamp},
		"future":         {stripedouble.Sign(e.Body, now.Add(301*time.Second), secret), ErrEventTimestamp},
		"garbage header": {"v1=zz,t=x", ErrEventSignature},
		// An old event's signature under a fresh timestamp in front:
		// stripe-go verifies against the last t=, the tolerance must not
		// be checked against another.
		"two timestamps": {"t=" + strconv.FormatInt(now.Unix(), 10) + "," + stripedouble.Sign(e.Body, now.Add(-48*time.Hour), secret),
			ErrEventSignature},
	} {
		if _, err := VerifyEvent(e.Body, tc.header, secret, now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// The refusal says which way the timestamp is off.
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-400 * time.Second), "6m40s ago; the limit is 5m0s either way"},
		{now.Add(400 * time.Second), "6m40s ahead of this server's clock; the limit is 5m0s either way"},
	} {
		_, err := VerifyEvent(e.Body, stripedouble.Sign(e.Body, tc.at, secret), secret, now)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("signed at %s: %v, want it to end %q", tc.at, err, tc.want)
		}
	}
	if _, err := verify(t, d, e, now.Add(-299*time.Second), now); err != nil {
		t.Errorf("within tolerance: %v", err)
	}
	// Two signatures (a rolled secret): either may verify.
	h := stripedouble.Sign(e.Body, now, "whsec_old") + "," + strings.Split(stripedouble.Sign(e.Body, now, secret), ",")[1]
	if _, err := VerifyEvent(e.Body, h, secret, now); err != nil {
		t.Errorf("rolled secret: %v", err)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for _, body := range []string{
		``, `{`, `[]`, `{"id":"evt_1"}`,
		`{"id":"evt_1","type":"payment_intent.succeeded","created":1,"data":{}}`,
		`{"id":"evt_1","type":"payment_intent.succeeded","created":1,"data":{"object":{"object":"refund","id":"re_1"}}}`,
		`{"id":"evt_1","type":"refund.updated","created":1,"data":{"object":{"object":"refund"}}}`,
		`{"id":"evt_1","type":"charge.refunded","created":1,"data":{"object":{"object":"charge","id":"ch_1","amount_refunded":"x"}}}`,
	} {
		if _, err := DecodeEvent([]byte(body)); !errors.Is(err, ErrEventMalformed) {
			t.Errorf("%s: %v", body, err)
		}
	}
	ev, err := DecodeEvent([]byte(`{"id":"evt_1","type":"customer.created","created":1,"data":{"object":{"object":"customer","id":"cus_1"}}}`))
	if err != nil || ev.Payment != nil || ev.Refund != nil || ev.Type != "customer.created" {
		t.Errorf("other type: %+v %v", ev, err)
	}
}

// A charge.* event decodes by its object's type: the refund that
// charge.refund.updated carries as a refund.updated's would be (here from
// the double, a refund failed after it succeeded), a dispute or any other
// object as Other with the payment it names; each validly signed event is
// accepted, and a bad signature is still refused.
func TestChargeFamilyEventsDecodeByTheirObject(t *testing.T) {
	conn, d, clock := setup(t, stripedouble.Options{})
	ctx := context.Background()
	p, err := conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	if err != nil {
		t.Fatal(err)
	}
	r, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_2", PaymentReference: p.Reference,
		RefundID: "ref_1", AmountMinor: 300, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.FailRefund(r.Reference, "expired_or_canceled_card"); err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	var refundTypes []string
	for _, e := range d.EventsFor(p.Reference) {
		if e.Type != "refund.updated" && e.Type != "charge.refund.updated" {
			continue
		}
		ev, err := verify(t, d, e, now, now)
		if err != nil || ev.Refund == nil || ev.Refund.State != processor.RefundFailed || ev.Refund.FailureCode != "expired_or_canceled_card" ||
			ev.Refund.RefundID != "ref_1" || ev.PaymentReference != p.Reference || ev.Other {
			t.Errorf("%s: %+v %+v %v", e.Type, ev, ev.Refund, err)
		}
		refundTypes = append(refundTypes, e.Type)
	}
	if len(refundTypes) != 2 {
		t.Errorf("the failed refund's events: %v, want refund.updated and charge.refund.updated", refundTypes)
	}

	for _, tc := range []struct{ body, ref string }{
		{`{"id":"evt_d1","object":"event","type":"charge.dispute.created","created":1800000000,"data":{"object":{"id":"dp_1","object":"dispute","amount":1050,"currency":"brl","charge":"ch_1","payment_intent":"pi_1","status":"needs_response"}}}`,
			"pi_1"},
		{`{"id":"evt_d2","object":"event","type":"charge.dispute.closed","created":1800000000,"data":{"object":{"id":"dp_2","object":"dispute","payment_intent":{"id":"pi_2","object":"payment_intent"}}}}`,
			"pi_2"},
		{`{"id":"evt_d3","object":"event","type":"charge.dispute.funds_withdrawn","created":1800000000,"data":{"object":{"id":"dp_3","object":"dispute","payment_intent":null}}}`,
			""},
		{`{"id":"evt_x1","object":"event","type":"charge.something_new","created":1800000000,"data":{"object":{"id":"xx_1","object":"something_new"}}}`,
			""},
	} {
		body, ref, at := tc.body, tc.ref, time.Unix(1_800_000_000, 0)
		ev, err := VerifyEvent([]byte(body), stripedouble.Sign([]byte(body), at, secret), secret, at)
		if err != nil || !ev.Other || ev.PaymentReference != ref || ev.Payment != nil || ev.Refund != nil {
			t.Errorf("%s: %+v %v; want it accepted as Other about %q", body, ev, err, ref)
		}
		if _, err := VerifyEvent([]byte(body), stripedouble.Sign([]byte(body), at, "whsec_other"), secret, at); !errors.Is(err, ErrEventSignature) {
			t.Errorf("%s with a bad signature: %v", body, err)
		}
	}
	for _, body := range []string{
		`{"id":"evt_1","type":"charge.dispute.created","created":1,"data":{"object":{"object":"dispute"}}}`,
		`{"id":"evt_1","type":"charge.refund.updated","created":1,"data":{"object":{"object":"refund","amount":"x","id":"re_1"}}}`,
		`{"id":"evt_1","type":"charge.refund.updated","created":1,"data":{"object":"re_1"}}`,
	} {
		if _, err := DecodeEvent([]byte(body)); !errors.Is(err, ErrEventMalformed) {
			t.Errorf("%s: %v, want malformed", body, err)
		}
	}
}
