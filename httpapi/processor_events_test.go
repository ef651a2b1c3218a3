package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/processor/stripe"
)

// POST /processor/stripe/events: 404 without a webhook secret; with one,
// 400 for a body that does not verify (nothing stored) and 200 for one
// that does, again 200 when it comes twice (stored once).
func TestProcessorEventsRoute(t *testing.T) {
	t.Parallel()
	const secret = "whsec_route_test"
	body := fmt.Sprintf(`{"id":"evt_route_1","object":"event","created":%d,"type":"payment_intent.succeeded",`+
		`"data":{"object":{"id":"pi_route_1","object":"payment_intent","amount":1050,"currency":"brl","status":"succeeded",`+
		`"metadata":{"cmpay_payment_id":"pay_route_1"}}}}`, time.Now().Unix())

	off := setup(t, dbtest.SQLite(t))
	if res, _ := off.raw(t, "POST", "/processor/stripe/events", nil, body); res.StatusCode != http.StatusNotFound {
		t.Errorf("without a secret: %d, want 404", res.StatusCode)
	}

	db := dbtest.SQLite(t)
	in, err := intake.New(db.Gorm, intake.Options{Processor: "stripe",
		Verify: func(p []byte, sig string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(p, sig, secret, now)
		},
		Decode: stripe.DecodeEvent})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.ProcessorEvents = in })
	signed := func(s string) http.Header {
		return http.Header{"Stripe-Signature": {stripedouble.Sign([]byte(body), time.Now(), s)}, "Content-Type": {"application/json"}}
	}
	for _, bad := range []http.Header{nil, signed("whsec_someone_else")} {
		if res, out := b.raw(t, "POST", "/processor/stripe/events", bad, body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("a body that does not verify: %d %s, want 400", res.StatusCode, out)
		}
	}
	if got, _ := in.EventsOf(t.Context(), "pi_route_1"); len(got) != 0 {
		t.Fatalf("refused events were stored: %+v", got)
	}
	for range 2 {
		if res, out := b.raw(t, "POST", "/processor/stripe/events", signed(secret), body); res.StatusCode != http.StatusOK {
			t.Fatalf("a signed event: %d %s, want 200", res.StatusCode, out)
		}
	}
	if got, err := in.EventsOf(t.Context(), "pi_route_1"); err != nil || len(got) != 1 || got[0].ID != "evt_route_1" {
		t.Errorf("stored: %+v, %v; want evt_route_1 once", got, err)
	}
}

// POST /sandbox/payments/{id}/pay: with the sandbox leaving Pix pending,
// it pays one (200, CAPTURED), then refuses to pay it again (409); with
// another processor the route is not there.
func TestSandboxPayRoute(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods = processor.SandboxAsync
	svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.Service, d.Sandbox = svc, true })
	res, body := b.raw(t, "POST", "/api/payments", restHeaders("pix-pay-1"), `{"clientId":"shop-7","amount":"12.30","currency":"BRL","method":"PIX"}`)
	var created struct{ ID, Status string }
	if err := json.Unmarshal(body, &created); err != nil || res.StatusCode != http.StatusCreated || created.Status != "PENDING" {
		t.Fatalf("create: %d %s", res.StatusCode, body)
	}
	pay := "/sandbox/payments/" + created.ID + "/pay"
	auth := http.Header{"Authorization": {"Bearer " + token}}
	res, body = b.raw(t, "POST", pay, auth, "")
	var paid struct{ Status, CapturedAmount string }
	if err := json.Unmarshal(body, &paid); err != nil || res.StatusCode != http.StatusOK || paid.Status != "CAPTURED" || paid.CapturedAmount != "12.30" {
		t.Fatalf("pay: %d %s", res.StatusCode, body)
	}
	if res, body = b.raw(t, "POST", pay, auth, ""); res.StatusCode != http.StatusConflict {
		t.Errorf("paying again: %d %s, want 409", res.StatusCode, body)
	}
	if res, _ = b.raw(t, "POST", pay, nil, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", res.StatusCode)
	}
	other := setup(t, dbtest.SQLite(t))
	if res, _ = other.raw(t, "POST", pay, auth, ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("without the sandbox: %d, want 404", res.StatusCode)
	}
}

// stripeInstance is one CMPay instance paying through the Stripe connector
// against d and taking in its events, over db.
func stripeInstance(t *testing.T, db dbtest.DB, d *stripedouble.Double) (*bundle, *payments.Service, *intake.Service) {
	t.Helper()
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, "sk_test_events", d.URL(), 2*time.Second
	conn, err := stripe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	svc, err := payments.NewService(db.Gorm, payments.Config{Processor: conn, ProcessorTimeout: cfg.Timeout, RecoveryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in, err := intake.New(db.Gorm, intake.Options{Processor: processor.NameStripe, Decode: stripe.DecodeEvent, Apply: svc,
		Verify: func(p []byte, sig string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(p, sig, eventSecret, now)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return setup(t, db, func(deps *httpapi.Deps) { deps.Service, deps.ProcessorEvents = svc, in }), svc, in
}

const eventSecret = "whsec_events_test"

// stripeEvents is two CMPay instances over one database paying through
// one Stripe double, and what the tests of its events share.
type stripeEvents struct {
	d        *stripedouble.Double
	db       dbtest.DB
	one, two *bundle
	svc      *payments.Service
	in       *intake.Service
}

func newStripeEvents(t *testing.T, db dbtest.DB, opts stripedouble.Options) *stripeEvents {
	t.Helper()
	s := &stripeEvents{d: stripedouble.New(opts), db: db}
	t.Cleanup(s.d.Close)
	s.one, s.svc, s.in = stripeInstance(t, db, s.d)
	s.two, _, _ = stripeInstance(t, db, s.d)
	return s
}

// deliver posts events to both instances, each three times, shuffled, all
// at once, and fails the test unless every one is answered 200.
func (s *stripeEvents) deliver(t *testing.T, events []stripedouble.Event) {
	t.Helper()
	for i, b := range []*bundle{s.one, s.two} {
		statuses, err := s.d.Deliver(t.Context(), b.srv.URL+"/processor/stripe/events", eventSecret, events,
			stripedouble.Delivery{Order: stripedouble.Shuffled, Seed: uint64(i), Copies: 3, Concurrent: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range statuses {
			if st != http.StatusOK {
				t.Fatalf("delivery statuses %v", statuses)
			}
		}
	}
}

// card creates a captured card payment of 50.00 BRL.
func (s *stripeEvents) card(t *testing.T, key string) payments.Payment {
	t.Helper()
	tok := "pm_card_visa"
	res, err := s.svc.Create(t.Context(), payments.CreateRequest{ClientID: "shop-7", IdempotencyKey: key, Amount: "50",
		Currency: "BRL", Method: payments.MethodCreditCard, PaymentMethodToken: &tok, Origin: payments.Origin{Transport: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Payment
}

// refund refunds the whole payment, which must leave the refund in status
// want; it returns the refund's id and the one refund it made at Stripe.
// what names the refund in a failure.
func (s *stripeEvents) refund(t *testing.T, what, paymentID, key string, want payments.RefundStatus) (id, atStripe string) {
	t.Helper()
	res, err := s.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: paymentID, IdempotencyKey: key,
		Origin: payments.Origin{Transport: "test"}})
	if err != nil || res.Refund == nil || res.Refund.Status != want {
		t.Fatalf("%s: %+v, %v", what, res.Refund, err)
	}
	refunds := s.d.RefundsFor(res.Refund.ID)
	if len(refunds) != 1 {
		t.Fatalf("%d refunds at the double", len(refunds))
	}
	return res.Refund.ID, refunds[0]
}

// eventsOfType counts the payment's events of one type.
func (s *stripeEvents) eventsOfType(id, typ string) int64 {
	var n int64
	s.db.Gorm.Raw(`SELECT COUNT(*) FROM payment_events WHERE payment_id = ? AND type = ?`, id, typ).Scan(&n)
	return n
}

// Stripe's events settle Pix payments and refunds whatever they do: each
// event three times, shuffled, all at once, half to each of two instances
// (applied once); an event that comes before CMPay has recorded the
// create's answer (kept, then applied); a refund's events (its pending
// refund settled). Bad signatures and old timestamps: intake's tests.
func TestStripeEventsSettlePayments(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newStripeEvents(t, db, stripedouble.Options{RefundsPending: true})
		t.Run("a Pix payment paid", func(t *testing.T) {
			paid := s.pix(t, "pix-events-1")
			if err := s.d.Pay(paid.ProcessorReference); err != nil {
				t.Fatal(err)
			}
			s.deliver(t, s.d.EventsFor(paid.ProcessorReference))
			if got, _ := s.svc.Get(t.Context(), paid.ID); got.Status != payments.StatusCaptured || s.eventsOfType(paid.ID, "PAYMENT_CAPTURED") != 1 {
				t.Errorf("after its events: %s with %d PAYMENT_CAPTURED events; want CAPTURED, one", got.Status, s.eventsOfType(paid.ID, "PAYMENT_CAPTURED"))
			}
		})
		t.Run("an event before the create is answered", s.eventBeforeTheCreatesAnswer)
		t.Run("a refund Stripe leaves pending, then settles", func(t *testing.T) {
			ctx := t.Context()
			card := s.card(t, "card-events")
			_, atStripe := s.refund(t, "a refund Stripe leaves pending", card.ID, "card-events-r", payments.RefundProcessing)
			if err := s.d.SettleRefund(atStripe, true, ""); err != nil {
				t.Fatal(err)
			}
			s.deliver(t, s.d.EventsFor(card.ProcessorReference))
			if _, err := s.svc.RecoverDue(ctx); err != nil {
				t.Fatal(err)
			}
			all, err := s.svc.Refunds(ctx, card)
			if err != nil || len(all) != 1 || all[0].Status != payments.RefundSucceeded {
				t.Errorf("after its events: %+v, %v; want the refund SUCCEEDED", all, err)
			}
		})
	})
}

func (s *stripeEvents) pix(t *testing.T, key string) payments.Payment {
	t.Helper()
	res, err := s.svc.Create(t.Context(), payments.CreateRequest{ClientID: "shop-7", IdempotencyKey: key, Amount: "30.00",
		Currency: "BRL", Method: payments.MethodPix, Origin: payments.Origin{Transport: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Payment
}

// eventBeforeTheCreatesAnswer: the create's answer lost, the payment is
// PROCESSING, with no reference, when its events come; they are kept, and
// applied once recovery has read the payment at Stripe.
func (s *stripeEvents) eventBeforeTheCreatesAnswer(t *testing.T) {
	ctx := t.Context()
	s.d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
	early := s.pix(t, "pix-events-2")
	intents := s.d.IntentsFor(early.ID)
	if early.Status != payments.StatusProcessing || len(intents) != 1 {
		t.Fatalf("a create whose answer was lost: %s, %d intents", early.Status, len(intents))
	}
	if err := s.d.Pay(intents[0]); err != nil {
		t.Fatal(err)
	}
	s.deliver(t, s.d.EventsFor(intents[0]))
	if got, _ := s.svc.Get(ctx, early.ID); got.Status != payments.StatusProcessing {
		t.Fatalf("before recovery: %s", got.Status)
	}
	// What the Recoverer and the Retrier do on their timers: the events
	// made the create due at once; asking again gets Stripe's replayed
	// 500, so recovery reads the record a second later.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := s.svc.RecoverDue(ctx); err != nil {
			t.Fatal(err)
		}
		// Wired straight to payments here, "not yet" comes back as
		// ErrPaymentNotKnown (the server maps it to intake.ErrNotYet).
		if _, err := s.in.Retry(ctx, 10); err != nil && !errors.Is(err, payments.ErrPaymentNotKnown) {
			t.Fatal(err)
		}
		if got, _ := s.svc.Get(ctx, early.ID); got.Status == payments.StatusCaptured || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
	if got, _ := s.svc.Get(ctx, early.ID); got.Status != payments.StatusCaptured || s.eventsOfType(early.ID, "PAYMENT_CAPTURED") != 1 {
		t.Errorf("an event before the create's answer: %s with %d PAYMENT_CAPTURED; want CAPTURED, one", got.Status, s.eventsOfType(early.ID, "PAYMENT_CAPTURED"))
	}
	pendingEvents := s.eventsOfType(early.ID, "PAYMENT_PENDING")
	if st, err := s.svc.AsyncStateOf(ctx, early.ID); err != nil || st.PaidAt.IsZero() || pendingEvents != 1 {
		t.Errorf("paid before its create was known: paidAt %v (%v), %d PAYMENT_PENDING; want a time and one", st.PaidAt, err, pendingEvents)
	}
}

// Posted to two instances, each event three times, shuffled, all at once:
// the events of a refund Stripe fails after it succeeded make it FAILED
// once (REST and GraphQL show the refund FAILED with Stripe's code and
// the payment CAPTURED with nothing refunded, the admin's page says it came
// back; one PAYMENT_REFUND_FAILED carries it), and a dispute's event,
// whose object CMPay does not act on, is answered 200 and stored with its
// payment.
func TestStripeEventsReturnARefund(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s := newStripeEvents(t, db, stripedouble.Options{})
		card := s.card(t, "returned")
		ref := card.ProcessorReference
		refundID, atStripe := s.refund(t, "refund", card.ID, "returned-r", payments.RefundSucceeded)
		if err := s.d.FailRefund(atStripe, "expired_or_canceled_card"); err != nil {
			t.Fatal(err)
		}
		dispute := stripedouble.Event{ID: "evt_dispute_1", Type: "charge.dispute.created", Body: fmt.Appendf(nil,
			`{"id":"evt_dispute_1","object":"event","type":"charge.dispute.created","created":%d,"data":{"object":`+
				`{"id":"dp_1","object":"dispute","amount":5000,"currency":"brl","payment_intent":%q,"status":"needs_response"}}}`,
			time.Now().Unix(), ref)}
		s.deliver(t, append(s.d.EventsFor(ref), dispute))
		t.Run("the APIs show the refund FAILED", func(t *testing.T) { s.refundShownFailed(t, card.ID) })
		t.Run("the admin page says it came back", func(t *testing.T) {
			_, page := s.one.adminPage(t, "/admin/payments/"+card.ID)
			section := strings.Join(strings.Fields(page.Find("section.processor").Text()), " ")
			for _, want := range []string{"The refund of 50.00 BRL succeeded, then came back", "charge.refund.updated",
				"charge.dispute.created"} {
				if !strings.Contains(section, want) {
					t.Errorf("the admin's processor section lacks %q: %s", want, section)
				}
			}
		})
		t.Run("one PAYMENT_REFUND_FAILED, every event stored", func(t *testing.T) {
			s.refundFailedOnceEventsStored(t, card.ID, ref, refundID)
		})
	})
}

// refundShownFailed: REST and GraphQL show the refund FAILED with Stripe's
// code and the payment CAPTURED with nothing refunded.
func (s *stripeEvents) refundShownFailed(t *testing.T, id string) {
	resp, body := s.one.raw(t, "GET", "/api/payments/"+id, restHeaders(""), "")
	var got struct {
		Status, RefundedAmount string
		Refunds                []struct{ Status, FailureCode string }
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	if got.Status != "CAPTURED" || got.RefundedAmount != "0.00" || len(got.Refunds) != 1 ||
		got.Refunds[0].Status != "FAILED" || got.Refunds[0].FailureCode != "expired_or_canceled_card" {
		t.Errorf("REST shows %s", body)
	}
	gql := s.one.gql(t, `query($id: ID!) { payment(id: $id) { status refundedAmount refunds { status failureCode } } }`,
		map[string]any{"id": id})
	if got := string(gql.Data["payment"]); got !=
		`{"status":"CAPTURED","refundedAmount":"0.00","refunds":[{"status":"FAILED","failureCode":"expired_or_canceled_card"}]}` {
		t.Errorf("GraphQL shows %s %v", got, gql.Errors)
	}
}

// refundFailedOnceEventsStored: one PAYMENT_REFUND_FAILED carries the
// refund; Stripe's events, the dispute's among them, are stored with the
// payment and applied.
func (s *stripeEvents) refundFailedOnceEventsStored(t *testing.T, id, ref, refundID string) {
	var failed []struct{ RefundID *string }
	s.db.Gorm.Raw(`SELECT refund_id FROM payment_events WHERE payment_id = ? AND type = 'PAYMENT_REFUND_FAILED'`,
		id).Scan(&failed)
	if len(failed) != 1 || failed[0].RefundID == nil || *failed[0].RefundID != refundID {
		t.Errorf("PAYMENT_REFUND_FAILED events: %+v; want one for %s", failed, refundID)
	}
	stored, err := s.in.EventsOf(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range stored {
		if e.AppliedAt == nil {
			t.Errorf("event %s %s is not applied", e.ID, e.Type)
		}
		types = append(types, e.Type)
	}
	if !slices.Contains(types, "charge.dispute.created") || !slices.Contains(types, "charge.refund.updated") {
		t.Errorf("stored events: %v", types)
	}
}

// A REST replay of a cancel or refund Stripe refused answers the same 402
// PROCESSOR_REFUSED with Idempotent-Replayed: true, as the contract's REST
// table promises every replay; the first answer has no such header.
func TestRESTReplayOfARefusalSaysReplayed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		d := stripedouble.New(stripedouble.Options{})
		t.Cleanup(d.Close)
		b, svc, _ := stripeInstance(t, db, d)
		ctx := t.Context()
		card := func(key string, capture bool) payments.Payment {
			res, err := svc.Create(ctx, payments.CreateRequest{ClientID: "shop-r", IdempotencyKey: key, Amount: "20.00",
				Currency: "BRL", Method: payments.MethodCreditCard, PaymentMethodToken: new("pm_card_visa"), Capture: &capture,
				Origin: payments.Origin{Transport: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Payment
		}
		// Captured at Stripe behind CMPay's back: a cancel is refused.
		canceled := card("refused-cancel", false)
		if err := d.CaptureFromDashboard(canceled.ProcessorReference, 0); err != nil {
			t.Fatal(err)
		}
		// Refunded in full at Stripe behind CMPay's back: a refund is
		// refused at once (charge_already_refunded).
		refunded := card("refused-refund", true)
		cfg := processor.DefaultConfig()
		cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase = processor.NameStripe, "sk_test_events", d.URL()
		conn, err := stripe.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.CloseIdleConnections)
		if _, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "behind", PaymentReference: refunded.ProcessorReference,
			RefundID: "ref_behind", AmountMinor: 2000, Currency: "BRL"}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ path, code string }{
			{"/api/payments/" + canceled.ID + "/cancel", "payment_captured"},
			{"/api/payments/" + refunded.ID + "/refunds", "charge_already_refunded"},
		} {
			for i := range 2 {
				res, out := b.raw(t, "POST", tt.path, restHeaders("refused-"+tt.code), "")
				p := decodeProblem(t, res, out)
				if res.StatusCode != http.StatusPaymentRequired || p.Code != "PROCESSOR_REFUSED" || !strings.Contains(string(out), tt.code) {
					t.Errorf("%s #%d: %d %s, want 402 PROCESSOR_REFUSED %s", tt.path, i, res.StatusCode, out, tt.code)
				}
				if got := res.Header.Get("Idempotent-Replayed"); (got == "true") != (i == 1) {
					t.Errorf("%s #%d: Idempotent-Replayed %q, want it on the replay only", tt.path, i, got)
				}
			}
		}
	})
}
