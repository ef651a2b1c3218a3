package payments_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/processor/stripe"
)

// Short processor times for tests: a slow call ends after testTimeout,
// and an unknown outcome is due testRecovery later by the fake clock,
// which the tests move past it.
const (
	testTimeout  = time.Second
	testRecovery = time.Second
)

// processorSetup is a bundle whose service uses proc with the short times.
func processorSetup(t *testing.T, db dbtest.DB, proc processor.Processor) *bundle {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	svc := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: clock.Now, Processor: proc,
		ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
	return &bundle{db: db, svc: svc, clock: clock}
}

func withToken(req payments.CreateRequest, token string) payments.CreateRequest {
	if token != "" {
		req.PaymentMethodToken = &token
	}
	return req
}

func card(key string) payments.CreateRequest {
	return request("client-1", key, "10.50", "BRL", payments.MethodCreditCard)
}

// calls are a payment's processor calls as "OPERATION OUTCOME code".
func (b *bundle) calls(t *testing.T, p payments.Payment) []string {
	t.Helper()
	all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range all[0] {
		out = append(out, fmt.Sprintf("%s %s %s", c.Operation, c.Outcome, c.Code))
	}
	return out
}

// events counts a payment's events of each type.
func (b *bundle) events(t *testing.T, paymentID string) map[string]int64 {
	t.Helper()
	var rows []struct {
		Type string
		N    int64
	}
	if err := b.db.Gorm.Table("payment_events").Select("type, count(*) AS n").Where("payment_id = ?", paymentID).
		Group("type").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.Type] = r.N
	}
	return out
}

// The sandbox rows of the contract: each token's answer, stored with its
// call, announced by its event, and replayed as it is.
func TestSandboxTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		token   string
		status  payments.Status
		decline string
		event   string
	}{
		{"", payments.StatusCaptured, "", "PAYMENT_CREATED"},
		{"pm_card_visa", payments.StatusCaptured, "", "PAYMENT_CREATED"},
		{"pm_card_mastercard", payments.StatusCaptured, "", "PAYMENT_CREATED"},
		{"pm_card_chargeDeclined", payments.StatusDeclined, "card_declined", "PAYMENT_DECLINED"},
		{"pm_card_chargeDeclinedInsufficientFunds", payments.StatusDeclined, "insufficient_funds", "PAYMENT_DECLINED"},
		{"pm_something_else", payments.StatusDeclined, "invalid_payment_method", "PAYMENT_DECLINED"},
	}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for i, tt := range tests {
			req := withToken(card(fmt.Sprintf("token-%d", i)), tt.token)
			res := b.mustCreate(t, req)
			p := res.Payment
			if p.Status != tt.status || p.DeclineCode != tt.decline || p.Processor != "sandbox" || p.PaymentMethodToken != tt.token {
				t.Errorf("token %q: %s %q by %q with token %q, want %s %q by sandbox", tt.token, p.Status, p.DeclineCode,
					p.Processor, p.PaymentMethodToken, tt.status, tt.decline)
			}
			if p.ProcessorReference == "" {
				t.Errorf("token %q: no processor reference", tt.token)
			}
			if got := b.mustGet(t, p.ID); got != p {
				t.Errorf("token %q: read back %+v, answered %+v", tt.token, got, p)
			}
			outcome := "SUCCEEDED "
			if tt.decline != "" {
				outcome = "DECLINED " + tt.decline
			}
			if got, want := b.calls(t, p), []string{"CREATE_PAYMENT " + outcome}; !slices.Equal(got, want) {
				t.Errorf("token %q: calls %q, want %q", tt.token, got, want)
			}
			// The foreseen call is read from the payment: no operation or
			// call row, and the key its operation would have had.
			for _, table := range []string{"processor_calls", "processor_operations"} {
				var rows int64
				if err := b.db.Gorm.Table(table).Where("payment_id = ?", p.ID).Count(&rows).Error; err != nil || rows != 0 {
					t.Errorf("token %q: %d %s rows (%v), want none", tt.token, rows, table, err)
				}
			}
			all, err := b.svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
			if err != nil || len(all[0]) != 1 || all[0][0].ProcessorKey != "cmpay_op_"+strings.TrimPrefix(p.ID, "pay_") ||
				!all[0][0].At.Equal(p.CreatedAt) || all[0][0].Duration != 0 {
				t.Errorf("token %q: calls %+v (%v), want one keyed by the payment's id, at its creation, 0 ms", tt.token, all, err)
			}
			if ev := b.events(t, p.ID); len(ev) != 1 || ev[tt.event] != 1 {
				t.Errorf("token %q: events %v, want one %s", tt.token, ev, tt.event)
			}
			again := b.mustCreate(t, req)
			if !again.Replayed || again.Payment.Status != tt.status || again.Payment.DeclineCode != tt.decline {
				t.Errorf("token %q: replay %+v", tt.token, again)
			}
			_, err = b.svc.Create(t.Context(), withToken(card(fmt.Sprintf("token-%d", i)), "pm_other"))
			var reused *payments.KeyReusedError
			if !errors.As(err, &reused) || !slices.Equal(reused.DifferingFields, []string{"paymentMethodToken"}) {
				t.Errorf("token %q: the key with another token: %v, want paymentMethodToken differing", tt.token, err)
			}
		}
	})
}

// The slow token's first send times out: the client gets PROCESSING, a
// replay the same, and recovery asks again with the same key and settles
// it CAPTURED, announced once.
func TestSandboxSlowTokenIsRecovered(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		cfg := processor.DefaultConfig()
		cfg.Timeout = testTimeout
		b := processorSetup(t, db, sandbox.New(cfg))
		req := withToken(card("slow-1"), sandbox.TokenSlow)
		res := b.mustCreate(t, req)
		if res.Replayed || res.Payment.Status != payments.StatusProcessing {
			t.Fatalf("first answer %+v, want PROCESSING, not replayed", res)
		}
		again := b.mustCreate(t, req)
		if !again.Replayed || again.Payment.Status != payments.StatusProcessing {
			t.Fatalf("replay %+v, want PROCESSING, replayed", again)
		}
		if ev := b.events(t, res.Payment.ID); len(ev) != 0 {
			t.Errorf("a PROCESSING payment announced %v", ev)
		}
		if n := mustOpenUnknown(t, b.svc); n != 1 {
			t.Errorf("%d unknown outcomes open, want 1", n)
		}
		// Not due yet: nothing is claimed.
		if n, err := b.svc.RecoverDue(t.Context()); err != nil || n != 0 {
			t.Fatalf("RecoverDue before due = %d, %v; want 0", n, err)
		}
		b.clock.Advance(testRecovery + time.Second)
		if n, err := b.svc.RecoverDue(t.Context()); err != nil || n != 1 {
			t.Fatalf("RecoverDue = %d, %v; want 1", n, err)
		}
		p := b.mustGet(t, res.Payment.ID)
		if p.Status != payments.StatusCaptured || p.Captured.String() != "10.50" {
			t.Errorf("after recovery: %s captured %s, want CAPTURED 10.50", p.Status, p.Captured)
		}
		if got, want := b.calls(t, p), []string{"CREATE_PAYMENT UNKNOWN timeout", "CREATE_PAYMENT SUCCEEDED "}; !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
		if ev := b.events(t, p.ID); len(ev) != 1 || ev["PAYMENT_CREATED"] != 1 {
			t.Errorf("events %v, want one PAYMENT_CREATED", ev)
		}
		if n := mustOpenUnknown(t, b.svc); n != 0 {
			t.Errorf("%d unknown outcomes open after recovery", n)
		}
		if r := b.mustCreate(t, req); !r.Replayed || r.Payment.Status != payments.StatusCaptured {
			t.Errorf("replay after recovery %+v, want CAPTURED", r)
		}
	})
}

func mustOpenUnknown(t *testing.T, svc *payments.Service) int64 {
	t.Helper()
	n, err := svc.OpenUnknown(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// stripeOpts are how a bundle over the Stripe double differs from
// stripeSetup's, whose options are all zero.
type stripeOpts struct {
	// OnFakeClock dates the double's records by the bundle's clock moved by
	// Skew (zero: as with synchronized clocks) instead of by the real one.
	OnFakeClock bool
	Skew        time.Duration
	// DoubleLag is how long the double's search lags a new intent.
	DoubleLag time.Duration
	// SearchLag is the service's STRIPE_SEARCH_LAG (zero: its default).
	SearchLag time.Duration
	// Timeout is the connector's and the service's (zero: testTimeout).
	Timeout time.Duration
	// RecoveryAfter and KeyTTL are the service's (zero: testRecovery and
	// testTTL).
	RecoveryAfter, KeyTTL time.Duration
	// APIKey is the key the connector sends (zero: one the double takes).
	APIKey processor.Secret
	// RefundsPending leaves the double's refunds pending until settled.
	RefundsPending bool
	// OnAttempt is the service's hook (zero: none).
	OnAttempt func(payments.Operation, payments.Outcome, string)
	// Logger is the service's (zero: slog.Default()).
	Logger *slog.Logger
	// OnDuplicate is the service's hook (zero: none).
	OnDuplicate func(payments.Operation)
	// OnProcessorCall is the service's hook (zero: none).
	OnProcessorCall func(payments.Operation, payments.CallOutcome, time.Duration)
}

// stripeWith is a bundle whose service uses processor/stripe (the real
// stripe-go client) against a new double, as o says.
func stripeWith(t *testing.T, db dbtest.DB, o stripeOpts) (*bundle, *stripedouble.Double) {
	t.Helper()
	o.Timeout = cmp.Or(o.Timeout, testTimeout)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	dopts := stripedouble.Options{SearchLag: o.DoubleLag, RefundsPending: o.RefundsPending}
	if o.OnFakeClock {
		dopts.Clock = func() time.Time { return clock.Now().Add(o.Skew) }
	}
	d := stripedouble.New(dopts)
	t.Cleanup(d.Close)
	conn := stripeConnAs(t, d, o.Timeout, cmp.Or(o.APIKey, "sk_test_double"))
	svc := mustService(t, db.Gorm, payments.Config{KeyTTL: cmp.Or(o.KeyTTL, testTTL), Now: clock.Now, Processor: conn,
		ProcessorTimeout: o.Timeout, RecoveryAfter: cmp.Or(o.RecoveryAfter, testRecovery), SearchLag: o.SearchLag,
		OnAttempt: o.OnAttempt, Logger: o.Logger, OnDuplicate: o.OnDuplicate, OnProcessorCall: o.OnProcessorCall})
	return &bundle{db: db, svc: svc, clock: clock, conn: conn}, d
}

// stripeSetup is stripeWith's everyday bundle: the double on the real
// clock, search without lag, the test's short times.
func stripeSetup(t *testing.T, db dbtest.DB) (*bundle, *stripedouble.Double) {
	t.Helper()
	return stripeWith(t, db, stripeOpts{})
}

// stripeConn is another Stripe connector to the double, with the given
// timeout: a second instance's.
func stripeConn(t *testing.T, d *stripedouble.Double, timeout time.Duration) processor.Processor {
	t.Helper()
	return stripeConnAs(t, d, timeout, "sk_test_double")
}

// stripeConnAs is a Stripe connector to the double that sends apiKey (the
// double refuses any but sk_test_…).
func stripeConnAs(t *testing.T, d *stripedouble.Double, timeout time.Duration, apiKey processor.Secret) *stripe.Connector {
	t.Helper()
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, apiKey, d.URL(), timeout
	conn, err := stripe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	return conn
}

// createOthers makes n card payments of other CMPay payments directly at
// the double, the clock moved by every before each: the account's other
// intents a create's list must page through.
func createOthers(t *testing.T, b *bundle, n int, every time.Duration) {
	t.Helper()
	for i := range n {
		b.clock.Advance(every)
		if _, err := b.conn.CreatePayment(t.Context(), processor.CreatePaymentRequest{
			IdempotencyKey: fmt.Sprint("other-", i), PaymentID: fmt.Sprint("other-", i), AmountMinor: 100,
			Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa", Capture: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkCapturedOnce checks that got, as CMPay holds it, is CAPTURED with
// the one intent the double made for its id, captured once.
func checkCapturedOnce(t *testing.T, d *stripedouble.Double, got payments.Payment) {
	t.Helper()
	intents := d.IntentsFor(got.ID)
	if len(intents) != 1 || got.Status != payments.StatusCaptured || got.ProcessorReference != intents[0] ||
		d.Ledger(intents[0]).Captures != 1 {
		t.Errorf("CMPay %s %s; the double's intents %v", got.Status, got.ProcessorReference, intents)
	}
}

// recoverUntilSettled runs recovery rounds, the clock moved past each
// postponement, until the payment is no longer PROCESSING, or fails after
// 5 rounds past processor.DefaultStripeSearchLag (a create after a stored
// 500 waits it out before it is sent again).
func recoverUntilSettled(t *testing.T, b *bundle, id string) payments.Payment {
	t.Helper()
	for end := b.clock.Now().Add(processor.DefaultStripeSearchLag + 5*(testRecovery+time.Second)); b.clock.Now().Before(end); {
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p := b.mustGet(t, id); p.Status != payments.StatusProcessing {
			return p
		}
	}
	t.Fatalf("payment %s still PROCESSING after recovery rounds past the search lag; calls %q", id, b.calls(t, b.mustGet(t, id)))
	return payments.Payment{}
}

// Each fault of the double on a create: the client's first answer, then,
// after recovery, the payment as the double holds it, with money moved
// once.
func TestStripeCreateFaultsAreRecovered(t *testing.T) {
	t.Parallel()
	// Faults the processor recovers from within the call (none here: the
	// connector does not retry) would answer at once; every fault below
	// leaves the outcome unknown, so the client gets PROCESSING.
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		for i, fault := range stripedouble.Faults {
			t.Run(fault.String(), func(t *testing.T) {
				d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: fault})
				res := b.mustCreate(t, withToken(card(fmt.Sprintf("fault-%d", i)), "pm_card_visa"))
				p := res.Payment
				switch {
				case res.Replayed:
					t.Fatalf("first answer replayed")
				case p.Status == payments.StatusProcessing:
					p = recoverUntilSettled(t, b, p.ID)
				case fault != stripedouble.DropRequest && fault != stripedouble.DropResponse:
					t.Fatalf("first answer %s, want PROCESSING", p.Status)
				}
				// net/http sends a request with an Idempotency-Key again,
				// once, when a reused connection closes before any answer
				// (docs/design/processors.md): a dropped request or answer
				// may be settled within the call, with the same key.
				intents := d.IntentsFor(p.ID)
				if len(intents) != 1 {
					t.Fatalf("%d intents for one payment, want 1", len(intents))
				}
				if p.Status != payments.StatusCaptured || p.ProcessorReference != intents[0] || d.Status(intents[0]) != "succeeded" {
					t.Errorf("recovered %s %s; the double holds %s %s", p.Status, p.ProcessorReference, intents[0], d.Status(intents[0]))
				}
				if l := d.Ledger(intents[0]); l.Authorizations != 1 || l.Captures != 1 || l.Captured != 1050 {
					t.Errorf("ledger %+v, want one authorization and one capture of 1050", l)
				}
				if ev := b.events(t, p.ID); len(ev) != 1 || ev["PAYMENT_CREATED"] != 1 {
					t.Errorf("events %v, want one PAYMENT_CREATED", ev)
				}
			})
		}
	})
}

// A decline at Stripe is DECLINED at once with its code, as is a card that
// asks for 3-D Secure; a card payment without a token is bad input with
// Stripe.
func TestStripeDeclineAndMissingToken(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		res := b.mustCreate(t, withToken(card("declined"), "pm_card_chargeDeclinedInsufficientFunds"))
		if res.Payment.Status != payments.StatusDeclined || res.Payment.DeclineCode != "insufficient_funds" {
			t.Errorf("declined create: %s %q, want DECLINED insufficient_funds", res.Payment.Status, res.Payment.DeclineCode)
		}
		if ids := d.IntentsFor(res.Payment.ID); len(ids) != 1 || d.Ledger(ids[0]).Movements != 0 {
			t.Errorf("intents %v moved money", ids)
		}
		// A card that asks for 3-D Secure, which CMPay's API cannot
		// offer the payer, is declined at once, not left waiting.
		res = b.mustCreate(t, withToken(card("3ds"), "pm_card_authenticationRequired"))
		if res.Payment.Status != payments.StatusDeclined || res.Payment.DeclineCode != "authentication_required" {
			t.Errorf("3-D Secure card: %s %q, want DECLINED authentication_required", res.Payment.Status, res.Payment.DeclineCode)
		}
		if ids := d.IntentsFor(res.Payment.ID); len(ids) != 1 || d.Ledger(ids[0]).Movements != 0 {
			t.Errorf("3-D Secure card: intents %v moved money", ids)
		}
		before := b.rowCounts(t)
		_, err := b.svc.Create(t.Context(), card("no-token"))
		var bad *payments.InvalidInputError
		if !errors.As(err, &bad) || bad.Problems[0].Field != "paymentMethodToken" {
			t.Errorf("card without a token: %v, want bad paymentMethodToken", err)
		}
		if after := b.rowCounts(t); after != before {
			t.Errorf("a refused create wrote rows: %v then %v", before, after)
		}
	})
}

// An amount Stripe cannot take in a currency CMPay accepts (1.005 KWD:
// Stripe's three-decimal amounts end in 0; 10.50 MGA: Stripe counts
// whole ariary) is bad input, for a create and for a refund, with nothing
// written and nothing sent; 10 MGA is sent as 10.
func TestStripeAmountsItCannotTakeAreBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		mga := b.mustCreate(t, withToken(request("client-1", "mga", "10", "MGA", payments.MethodCreditCard), "pm_card_visa")).Payment
		if ids := d.IntentsFor(mga.ID); mga.Status != payments.StatusCaptured || len(ids) != 1 || d.Ledger(ids[0]).Captured != 10 {
			t.Fatalf("10 MGA: %s, intents %v; want CAPTURED, 10 ariary at Stripe", mga.Status, ids)
		}
		kwd := b.mustCreate(t, withToken(request("client-1", "kwd", "1.010", "KWD", payments.MethodCreditCard), "pm_card_visa")).Payment
		before, creates, refunds := b.rowCounts(t), d.Calls(stripedouble.CreatePaymentIntent), d.Calls(stripedouble.CreateRefund)
		bad := func(what string, err error) {
			t.Helper()
			var invalid *payments.InvalidInputError
			if !errors.As(err, &invalid) || invalid.Problems[0].Field != "amount" {
				t.Errorf("%s: %v, want bad amount", what, err)
			}
		}
		_, err := b.svc.Create(t.Context(), withToken(request("client-1", "kwd-2", "1.005", "KWD", payments.MethodCreditCard), "pm_card_visa"))
		bad("1.005 KWD", err)
		_, err = b.svc.Create(t.Context(), withToken(request("client-1", "mga-2", "10.50", "MGA", payments.MethodCreditCard), "pm_card_visa"))
		bad("10.50 MGA", err)
		_, err = b.refund(t, kwd.ID, "kwd-refund", ptr("0.005"))
		bad("a refund of 0.005 KWD", err)
		if after := b.rowCounts(t); after != before || d.Calls(stripedouble.CreatePaymentIntent) != creates ||
			d.Calls(stripedouble.CreateRefund) != refunds {
			t.Errorf("bad amounts wrote rows (%v then %v) or reached Stripe", before, after)
		}
	})
}

// One unresolved create, and at once: the client's retry, the recovery
// worker, and a second instance's recovery. The processor is asked for
// one payment, money moves once, and the payment settles once.
func TestRecoveryRaceMovesMoneyOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.DropResponse})
		req := withToken(card("race"), "pm_card_visa")
		res := b.mustCreate(t, req)
		if res.Payment.Status != payments.StatusProcessing {
			t.Fatalf("first answer %s, want PROCESSING", res.Payment.Status)
		}
		conn := stripeConn(t, d, testTimeout)
		second := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: b.clock.Now, Processor: conn,
			ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
		b.clock.Advance(testRecovery + time.Second)

		var wg sync.WaitGroup
		errs := make(chan error, 3)
		wg.Go(func() {
			r, err := b.svc.Create(context.Background(), req)
			if err == nil && !r.Replayed {
				err = fmt.Errorf("retry not a replay: %+v", r)
			}
			errs <- err
		})
		wg.Go(func() { _, err := b.svc.RecoverDue(context.Background()); errs <- err })
		wg.Go(func() { _, err := second.RecoverDue(context.Background()); errs <- err })
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		p := b.mustGet(t, res.Payment.ID)
		if p.Status == payments.StatusProcessing {
			p = recoverUntilSettled(t, b, p.ID)
		}
		intents := d.IntentsFor(p.ID)
		if len(intents) != 1 || p.Status != payments.StatusCaptured || d.Ledger(intents[0]).Captures != 1 {
			t.Errorf("payment %s, intents %v; want CAPTURED with one intent captured once", p.Status, intents)
		}
		if calls := d.Calls(stripedouble.CreatePaymentIntent); calls != 2 {
			t.Errorf("%d creates sent, want 2 (the request's, one recovery's)", calls)
		}
		if ev := b.events(t, p.ID); ev["PAYMENT_CREATED"] != 1 {
			t.Errorf("events %v, want one PAYMENT_CREATED", ev)
		}
	})
}

// stripeCard creates a card payment at the double, settled, captured or
// only authorized.
func stripeCard(t *testing.T, b *bundle, key string, capture bool) payments.Payment {
	t.Helper()
	req := withToken(card(key), "pm_card_visa")
	req.Capture = &capture
	p := b.mustCreate(t, req).Payment
	want := payments.StatusCaptured
	if !capture {
		want = payments.StatusAuthorized
	}
	if p.Status != want {
		t.Fatalf("setup: %s, want %s", p.Status, want)
	}
	return p
}

// recoverUntil runs recovery rounds until done says the payment is
// settled, or fails.
func recoverUntil(t *testing.T, b *bundle, id string, done func(payments.Payment) bool) payments.Payment {
	t.Helper()
	for range 5 {
		if p := b.mustGet(t, id); done(p) {
			return p
		}
		b.clock.Advance(testRecovery + time.Second)
		if _, err := b.svc.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	p := b.mustGet(t, id)
	if !done(p) {
		t.Fatalf("payment %s not settled after 5 recovery rounds: %+v; calls %q", id, p, b.calls(t, p))
	}
	return p
}

// Each fault of the double on a capture, a cancel and a refund: the
// client's answer (the pending operation, or the refund PROCESSING, or
// settled when the transport's own resend settled it), then after
// recovery the payment as the double holds it, money moved once.
func TestStripeChangeFaultsAreRecovered(t *testing.T) {
	t.Parallel()
	type change struct {
		endpoint stripedouble.Endpoint
		capture  bool // the payment is created captured
		run      func(b *bundle, id, key string) (payments.ChangeResult, error)
		settled  func(p payments.Payment) bool
		check    func(t *testing.T, p payments.Payment, l stripedouble.Ledger, status string)
	}
	changes := map[string]change{
		"capture": {stripedouble.CapturePaymentIntent, false,
			func(b *bundle, id, key string) (payments.ChangeResult, error) {
				return b.svc.Capture(context.Background(), payments.CaptureRequest{PaymentID: id, IdempotencyKey: key})
			},
			func(p payments.Payment) bool { return p.PendingOperation == "" },
			func(t *testing.T, p payments.Payment, l stripedouble.Ledger, status string) {
				if p.Status != payments.StatusCaptured || status != "succeeded" || l.Captures != 1 || l.Captured != 1050 {
					t.Errorf("%s; the double: %s %+v", p.Status, status, l)
				}
			}},
		"cancel": {stripedouble.CancelPaymentIntent, false,
			func(b *bundle, id, key string) (payments.ChangeResult, error) {
				return b.svc.Cancel(context.Background(), payments.CancelRequest{PaymentID: id, IdempotencyKey: key})
			},
			func(p payments.Payment) bool { return p.PendingOperation == "" },
			func(t *testing.T, p payments.Payment, l stripedouble.Ledger, status string) {
				if p.Status != payments.StatusCanceled || status != "canceled" || l.Cancels != 1 || l.Captured != 0 {
					t.Errorf("%s; the double: %s %+v", p.Status, status, l)
				}
			}},
		"refund": {stripedouble.CreateRefund, true,
			func(b *bundle, id, key string) (payments.ChangeResult, error) {
				return b.svc.Refund(context.Background(), payments.RefundRequest{PaymentID: id, IdempotencyKey: key, Amount: new("4")})
			},
			func(p payments.Payment) bool { return p.Reserved.Minor == 0 },
			func(t *testing.T, p payments.Payment, l stripedouble.Ledger, _ string) {
				if p.Status != payments.StatusPartiallyRefunded || p.Refunded.Minor != 400 || l.Refunds != 1 || l.Refunded != 400 {
					t.Errorf("%s refunded %d; the double: %+v", p.Status, p.Refunded.Minor, l)
				}
			}},
	}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		for name, c := range changes {
			for i, fault := range stripedouble.Faults {
				t.Run(name+"/"+fault.String(), func(t *testing.T) {
					p := stripeCard(t, b, fmt.Sprintf("%s-%d", name, i), c.capture)
					d.FailNext(c.endpoint, stripedouble.Fault{Kind: fault})
					res, err := c.run(b, p.ID, fmt.Sprintf("%s-%d-op", name, i))
					if err != nil || res.Replayed {
						t.Fatalf("first answer replayed %v, %v", res.Replayed, err)
					}
					if !c.settled(res.Payment) {
						if name == "refund" && (res.Refund == nil || res.Refund.Status != payments.RefundProcessing || res.Payment.Refundable().Minor != 650) {
							t.Errorf("refund in flight: %+v of %+v, want PROCESSING with 4.00 reserved", res.Refund, res.Payment)
						}
						if name != "refund" && (res.Payment.Status != payments.StatusAuthorized || res.Payment.PendingOperation == "") {
							t.Errorf("in flight: %s pending %q, want AUTHORIZED with the operation pending", res.Payment.Status, res.Payment.PendingOperation)
						}
						again, err := c.run(b, p.ID, fmt.Sprintf("%s-%d-op", name, i))
						if err != nil || !again.Replayed {
							t.Errorf("replay while in flight: %+v, %v", again, err)
						}
					}
					got := recoverUntil(t, b, p.ID, c.settled)
					c.check(t, got, d.Ledger(got.ProcessorReference), d.Status(got.ProcessorReference))
					if ev := b.events(t, p.ID); ev[string(map[string]payments.EventType{"capture": payments.EventCaptured,
						"cancel": payments.EventCanceled, "refund": payments.EventRefunded}[name])] != 1 {
						t.Errorf("events %v", ev)
					}
				})
			}
		}
	})
}

// While a capture is pending, another capture or a cancel is refused with
// the pending operation; a capture the processor refuses applies nothing,
// and its key replays the refusal.
func TestStripePendingAndRefusedChanges(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "pending", false)
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		if res, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "cap"}); err != nil ||
			res.Payment.PendingOperation != payments.OpCapture {
			t.Fatalf("capture: %+v, %v; want it pending", res, err)
		}
		_, err := b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: p.ID, IdempotencyKey: "cancel"})
		var conflict *payments.StateConflictError
		if !errors.As(err, &conflict) || conflict.PendingOperation != payments.OpCapture || conflict.Status != payments.StatusAuthorized {
			t.Errorf("cancel while a capture is pending: %v, want a state conflict naming the capture", err)
		}
		recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.Status == payments.StatusCaptured })

		// An intent canceled at Stripe behind CMPay's back (an authorization
		// it let expire): the capture is refused, the payment is what Stripe
		// says, CANCELED, announced once, and the key replays the refusal.
		q := stripeCard(t, b, "refused", false)
		if _, err := b.conn.CancelPayment(t.Context(), processor.CancelRequest{IdempotencyKey: "behind-the-back",
			Reference: q.ProcessorReference}); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			_, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: q.ID, IdempotencyKey: "cap-q"})
			var refused *payments.ProcessorRefusedError
			if !errors.As(err, &refused) || refused.Code != "payment_canceled" || refused.Replayed != (i == 1) {
				t.Errorf("capture %d of a canceled intent: %v (replayed %v), want PROCESSOR_REFUSED payment_canceled, the second replayed",
					i, err, refused != nil && refused.Replayed)
			}
		}
		if got := b.mustGet(t, q.ID); got.Status != payments.StatusCanceled || got.PendingOperation != "" {
			t.Errorf("after a refused capture: %s pending %q, want CANCELED, as Stripe says, with nothing pending", got.Status, got.PendingOperation)
		}
		if ev := b.events(t, q.ID); ev["PAYMENT_CAPTURED"] != 0 || ev["PAYMENT_CANCELED"] != 1 {
			t.Errorf("after a refused capture of a canceled intent: %v, want one PAYMENT_CANCELED", ev)
		}

		// Captured in Stripe's dashboard, in part: CMPay's cancel is
		// refused and the payment is CAPTURED with what Stripe captured.
		c := stripeCard(t, b, "dashboard", false)
		if _, err := b.conn.CapturePayment(t.Context(), processor.CaptureRequest{IdempotencyKey: "dashboard-capture",
			Reference: c.ProcessorReference, AmountMinor: 400, Currency: c.Amount.Currency}); err != nil {
			t.Fatal(err)
		}
		_, err = b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: c.ID, IdempotencyKey: "cancel-c"})
		var refused *payments.ProcessorRefusedError
		if !errors.As(err, &refused) || refused.Code != "payment_captured" {
			t.Errorf("cancel of an intent captured elsewhere: %v, want PROCESSOR_REFUSED payment_captured", err)
		}
		if got := b.mustGet(t, c.ID); got.Status != payments.StatusCaptured || got.Captured.Minor != 400 {
			t.Errorf("after it: %s, captured %s; want CAPTURED, 4.00 as Stripe captured", got.Status, got.Captured)
		}
	})
}

// Sandbox captures, cancels and refunds take the batch statements, and
// show their (foreseen) call beside the create's.
func TestSandboxChangesShowTheirCalls(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		no := false
		req := card("calls")
		req.Capture = &no
		p := b.mustCreate(t, req).Payment
		if _, err := b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "calls-c"}); err != nil {
			t.Fatal(err)
		}
		res, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "calls-r"})
		if err != nil || res.Refund.Status != payments.RefundSucceeded {
			t.Fatalf("refund: %+v, %v", res.Refund, err)
		}
		want := []string{"CREATE_PAYMENT SUCCEEDED ", "CAPTURE_PAYMENT SUCCEEDED ", "REFUND_PAYMENT SUCCEEDED "}
		if got := b.calls(t, b.mustGet(t, p.ID)); !slices.Equal(got, want) {
			t.Errorf("calls %q, want %q", got, want)
		}
	})
}

// Refunds at Stripe racing on one payment: together they never reserve
// more than was captured, and of sixteen requests with one key one
// refund is made.
func TestStripeRefundRace(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := stripeCard(t, b, "race-refunds", true)
		var wg sync.WaitGroup
		results := make([]error, 14)
		for i := range results {
			key := fmt.Sprintf("r-%d", i)
			if i >= 12 {
				key = "r-same"
			}
			wg.Go(func() {
				_, results[i] = b.svc.Refund(context.Background(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: key, Amount: new("1")})
			})
		}
		wg.Wait()
		exceeded := 0
		for _, err := range results {
			switch {
			case errors.Is(err, payments.ErrAmountExceeds):
				exceeded++
			case err != nil:
				t.Errorf("refund: %v", err)
			}
		}
		got := b.mustGet(t, p.ID)
		refunds, err := b.svc.Refunds(t.Context(), got)
		if err != nil {
			t.Fatal(err)
		}
		// 13 refunds asked (the shared key's once) for 10 units: 3 refused,
		// or 4 when the shared key's is refused (its replay is refused too).
		if len(refunds) != 10 || got.Refunded.Minor != 1000 || got.Reserved.Minor != 0 || exceeded < 3 || exceeded > 4 {
			t.Errorf("%d refunds, %d refunded, %d reserved, %d refused; want 10, 1000, 0 and 3 or 4",
				len(refunds), got.Refunded.Minor, got.Reserved.Minor, exceeded)
		}
		if l := d.Ledger(p.ProcessorReference); l.Refunded != 1000 || l.Refunds != 10 {
			t.Errorf("the double's ledger %+v, want 10 refunds of 1000 in all", l)
		}
	})
}

// The Recoverer resolves an unknown outcome in the background, on its
// own timer; the test waits for the settlement hook, with a deadline.
func TestRecovererResolvesInTheBackground(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		cfg := processor.DefaultConfig()
		cfg.Timeout = testTimeout
		clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
		settled := make(chan bool, 1)
		svc := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: clock.Now, Processor: sandbox.New(cfg),
			ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery,
			OnOperationSettled: func(_ payments.Operation, wasUnknown bool) { settled <- wasUnknown }})
		b := &bundle{db: db, svc: svc, clock: clock}
		res := b.mustCreate(t, withToken(card("background"), sandbox.TokenSlow))
		if res.Payment.Status != payments.StatusProcessing {
			t.Fatalf("first answer %s, want PROCESSING", res.Payment.Status)
		}
		b.clock.Advance(testRecovery + time.Second)
		r := b.svc.Recoverer(10*time.Millisecond, nil)
		if err := r.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		select {
		case wasUnknown := <-settled:
			if !wasUnknown {
				t.Error("the settlement of an unknown outcome was not reported as one")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("still PROCESSING 5 s after it was due")
		}
		if p := b.mustGet(t, res.Payment.ID); p.Status != payments.StatusCaptured {
			t.Errorf("resolved to %s, want CAPTURED", p.Status)
		}
	})
}

// Past Stripe's 24 hours a key is forgotten, and the same key would be a
// new request: recovery then only reads. A create that never reached the
// processor is not sent again, and so never charged late: found nowhere,
// it is declined (dayold_test.go); one that did is found and settled.
func TestRecoveryNeverResendsAForgottenKey(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		lost := b.mustCreate(t, withToken(card("lost-a-day"), "pm_card_visa")).Payment
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		made := b.mustCreate(t, withToken(card("made-a-day"), "pm_card_visa")).Payment
		if lost.Status != payments.StatusProcessing || made.Status != payments.StatusProcessing {
			t.Fatalf("first answers %s and %s, want PROCESSING", lost.Status, made.Status)
		}
		b.clock.Advance(25 * time.Hour) // every instance down for a day
		for range 3 {
			b.clock.Advance(testRecovery + time.Second)
			if _, err := b.svc.RecoverDue(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(d.IntentsFor(lost.ID)); n != 0 {
			t.Errorf("a create a day old was sent again: %d intents", n)
		}
		if got := b.mustGet(t, lost.ID); got.Status != payments.StatusDeclined || got.DeclineCode != payments.DeclineNotCreated {
			t.Errorf("nothing found at the processor: %s %q, want DECLINED %q", got.Status, got.DeclineCode, payments.DeclineNotCreated)
		}
		if got := b.mustGet(t, made.ID); got.Status != payments.StatusCaptured || len(d.IntentsFor(made.ID)) != 1 {
			t.Errorf("a create the processor made: %s, %d intents; want CAPTURED, one", got.Status, len(d.IntentsFor(made.ID)))
		}
	})
}

// A payment's changes, recovery and reads go to the processor that made
// it: a sandbox payment made before a switch to Stripe is still captured
// and refunded by the sandbox, and a Stripe payment met by a server
// configured for the sandbox is refused with nothing stored, its key
// unused, and its unsettled operations left to a server that can call
// Stripe.
func TestChangesGoToThePaymentsProcessor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		sb := processorSetup(t, db, nil)
		st, d := stripeSetup(t, db)
		no := false
		authorizeOnly := card("before-switch")
		authorizeOnly.Capture = &no
		early := sb.mustCreate(t, authorizeOnly).Payment
		if early.Processor != processor.NameSandbox {
			t.Fatalf("setup: made at %q", early.Processor)
		}
		res, err := st.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: early.ID, IdempotencyKey: "early-c"})
		if err != nil || res.Payment.Status != payments.StatusCaptured {
			t.Fatalf("capture of a sandbox payment on a Stripe server: %+v, %v", res.Payment, err)
		}
		res, err = st.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: early.ID, IdempotencyKey: "early-r"})
		if err != nil || res.Refund == nil || res.Refund.Status != payments.RefundSucceeded || res.Payment.Status != payments.StatusRefunded {
			t.Fatalf("refund of a sandbox payment on a Stripe server: %+v, %v", res, err)
		}
		if got := d.Calls(stripedouble.CapturePaymentIntent) + d.Calls(stripedouble.CreateRefund); got != 0 {
			t.Errorf("Stripe was asked %d times about a sandbox payment", got)
		}

		late := stripeCard(t, st, "at-stripe", false)
		_, err = sb.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: late.ID, IdempotencyKey: "late-c"})
		var unavailable *payments.ProcessorUnavailableError
		if !errors.As(err, &unavailable) || unavailable.Processor != processor.NameStripe {
			t.Fatalf("capture of a Stripe payment on a sandbox server: %v, want a ProcessorUnavailableError", err)
		}
		if p := sb.mustGet(t, late.ID); p.Status != payments.StatusAuthorized || p.PendingOperation != "" {
			t.Fatalf("after the refusal: %s pending %q, want AUTHORIZED and nothing pending", p.Status, p.PendingOperation)
		}
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		res, err = st.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: late.ID, IdempotencyKey: "late-c"})
		if err != nil || res.Replayed || res.Payment.PendingOperation != payments.OpCapture {
			t.Fatalf("the same key on the Stripe server: %+v, %v; want a new capture, its outcome unknown", res, err)
		}
		sb.clock.Advance(time.Hour)
		if n, err := sb.svc.RecoverDue(t.Context()); n != 0 || err != nil {
			t.Errorf("the sandbox server claimed %d operations (%v), want none of Stripe's", n, err)
		}
		if got := recoverUntil(t, st, late.ID, func(p payments.Payment) bool { return p.PendingOperation == "" }); got.Status != payments.StatusCaptured ||
			d.Ledger(got.ProcessorReference).Captures != 1 {
			t.Errorf("after recovery: %s; the double: %+v", got.Status, d.Ledger(got.ProcessorReference))
		}
	})
}

// OnProcessorCall is told of a foreseen call once it is stored, as
// processorCalls lists it: the create that made its payment and the
// capture and refund the batch statements applied, not their replays nor
// a replay of the create.
func TestForeseenCallsCountedOnceStored(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var mu sync.Mutex
		var told []string
		svc := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL,
			OnProcessorCall: func(op payments.Operation, outcome payments.CallOutcome, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				told = append(told, fmt.Sprintf("%s %s", op, outcome))
			}})
		no := false
		req := card("counted")
		req.Capture = &no
		var p payments.Payment
		for range 3 { // the create, then two replays
			res, err := svc.Create(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			p = res.Payment
		}
		for range 2 {
			if _, err := svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "counted-c"}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "counted-r", Amount: new("1")}); err != nil {
				t.Fatal(err)
			}
		}
		calls, err := svc.ProcessorCallsOf(t.Context(), []payments.Payment{p})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"CREATE_PAYMENT SUCCEEDED", "CAPTURE_PAYMENT SUCCEEDED", "REFUND_PAYMENT SUCCEEDED"}
		if !slices.Equal(told, want) || len(calls[0]) != len(want) {
			t.Errorf("told of %q with %d calls stored, want %q, one stored each", told, len(calls[0]), want)
		}
	})
}

// A key past IDEMPOTENCY_KEY_TTL whose payment's work is still unsettled
// at the processor (a create PROCESSING, a capture pending) is kept: the
// client's retry is a replay, not a second charge, and the sweeper keeps
// it too. Once settled, the key is forgotten as any other.
func TestAKeyOutlivesItsTTLWhileItsWorkIsInFlight(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{KeyTTL: time.Hour, RecoveryAfter: time.Hour})
		svc, clock, ctx := b.svc, b.clock, t.Context()

		// Stripe charges, then answers 500 (and replays it for the key).
		req := withToken(card("in-flight"), "pm_card_visa")
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		first := b.mustCreate(t, req).Payment
		authReq := withToken(request("client-1", "to-capture", "5.00", "BRL", payments.MethodCreditCard), "pm_card_visa")
		authReq.Capture = ptr(false)
		authorized := b.mustCreate(t, authReq).Payment
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorAfter})
		capture, err := b.capture(t, authorized.ID, "capture", nil)
		if err != nil || first.Status != payments.StatusProcessing || capture.Payment.PendingOperation == "" {
			t.Fatalf("first answers: create %s, capture %+v %v; want PROCESSING and a pending capture", first.Status, capture.Payment, err)
		}

		clock.Advance(time.Hour + payments.SweepGrace + time.Minute)
		if n, err := svc.SweepExpiredKeys(ctx, 0); err != nil || n != 0 {
			t.Errorf("the sweep deleted %d keys (%v); want the in-flight payments' keys kept", n, err)
		}
		again := b.mustCreate(t, req)
		if !again.Replayed || again.Payment.ID != first.ID {
			t.Errorf("the create's retry past the TTL: %s (replayed %v), want a replay of %s", again.Payment.ID, again.Replayed, first.ID)
		}
		captureAgain, err := b.capture(t, authorized.ID, "capture", nil)
		if err != nil || !captureAgain.Replayed {
			t.Errorf("the capture's retry past the TTL: replayed %v, %v; want a replay", captureAgain.Replayed, err)
		}
		if ids := d.IntentsFor(first.ID); len(ids) != 1 {
			t.Errorf("intents %v for one create", ids)
		}

		// Settled, the create's key is forgotten: the same request again is
		// a new payment, as the TTL says.
		for range 5 { // asked again (500 replayed), then read
			clock.Advance(time.Hour + time.Second)
			if _, err := svc.RecoverDue(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if p := b.mustGet(t, first.ID); p.Status != payments.StatusCaptured {
			t.Fatalf("after recovery: %s, want CAPTURED", p.Status)
		}
		if later := b.mustCreate(t, req); later.Replayed || later.Payment.ID == first.ID {
			t.Errorf("past the TTL, settled: replayed %v of %s, want a new payment", later.Replayed, later.Payment.ID)
		}
	})
}

// Recovery asks the processor about a claim's operations at once, not one
// after the other: four unknown creates whose asks the double holds all
// reach it while the first is still held (one at a time, the second would
// wait for the first's 30 s timeout), and all settle once answered.
func TestRecoveryAsksAboutABacklogAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeWith(t, db, stripeOpts{Timeout: 30 * time.Second})
		svc, clock := b.svc, b.clock

		var ids []string
		for i := range 4 {
			d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
			p := b.mustCreate(t, withToken(card(fmt.Sprint("backlog-", i)), "pm_card_visa")).Payment
			if p.Status != payments.StatusProcessing {
				t.Fatalf("create %d: %s, want PROCESSING", i, p.Status)
			}
			ids = append(ids, p.ID)
		}
		hold := make(chan struct{})
		release := sync.OnceFunc(func() { close(hold) })
		t.Cleanup(release) // also when the wait below fails
		asked := d.Calls(stripedouble.CreatePaymentIntent)
		for i := 1; i <= 4; i++ {
			d.FailNth(stripedouble.CreatePaymentIntent, asked+i, stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold})
		}
		clock.Advance(30*time.Second + testRecovery + time.Second)
		done := make(chan error, 1)
		go func() {
			_, err := svc.RecoverDue(context.WithoutCancel(t.Context()))
			done <- err
		}()
		waitFor(t, "four asks held at once", func() bool { return d.Calls(stripedouble.CreatePaymentIntent) == asked+4 })
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if p := b.mustGet(t, id); p.Status != payments.StatusCaptured {
				t.Errorf("%s: %s after recovery, want CAPTURED", id, p.Status)
			}
		}
	})
}

// A capture or cancel whose processor key Stripe first saw with other
// parameters (a deploy that changed the request between two sends) is
// answered 400 idempotency_error under that key for as long as Stripe
// keeps it, so asking again can never settle it, and a read finds the
// payment still authorized: recovery sends it again under a new key, which
// cannot move money twice (Stripe captures or cancels a PaymentIntent
// once). Before, it was only read, until the authorization expired.
func TestChangeAfterAnIdempotencyMismatchIsSentAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		for _, op := range []payments.Operation{payments.OpCapture, payments.OpCancel} {
			t.Run(string(op), func(t *testing.T) {
				p := stripeCard(t, b, "mismatch-"+string(op), false)
				endpoint, change := stripedouble.CapturePaymentIntent, func() (payments.ChangeResult, error) {
					return b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "m-" + p.ID})
				}
				if op == payments.OpCancel {
					endpoint, change = stripedouble.CancelPaymentIntent, func() (payments.ChangeResult, error) {
						return b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: p.ID, IdempotencyKey: "m-" + p.ID})
					}
				}
				d.FailNext(endpoint, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
				if res, err := change(); err != nil || res.Payment.PendingOperation != op {
					t.Fatalf("first answer %+v, %v; want the %s pending", res.Payment, err, op)
				}
				var key string
				if err := db.Gorm.Raw(`SELECT key FROM processor_operations WHERE payment_id = ? AND operation = ?`,
					p.ID, string(op)).Row().Scan(&key); err != nil {
					t.Fatal(err)
				}
				// The key's first request at Stripe asked for something else (a
				// capture of 0.01; for the cancel's key, on another endpoint)
				// and failed inside Stripe before doing anything.
				d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
				if _, err := b.conn.CapturePayment(t.Context(), processor.CaptureRequest{IdempotencyKey: key,
					Reference: p.ProcessorReference, AmountMinor: 1, Currency: p.Amount.Currency}); err == nil {
					t.Fatal("the other request under the key succeeded; want its stored 500")
				}
				got := recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
				l, status := d.Ledger(got.ProcessorReference), d.Status(got.ProcessorReference)
				switch {
				case op == payments.OpCapture && (got.Status != payments.StatusCaptured || status != "succeeded" ||
					l.Captures != 1 || l.Captured != 1050):
					t.Errorf("%s; the double: %s %+v; want captured once", got.Status, status, l)
				case op == payments.OpCancel && (got.Status != payments.StatusCanceled || status != "canceled" || l.Cancels != 1):
					t.Errorf("%s; the double: %s %+v; want canceled once", got.Status, status, l)
				}
			})
		}
	})
}

// The request's own first send of a capture or cancel is the one answered
// 400 idempotency_error (its key's first request at Stripe was a capture
// of 0.01 whose 500 Stripe stored): the request answers the change
// pending, recovery reads the payment still authorized and sends the
// change under a new key, and when Stripe later completes that first
// request it can no longer move money.
func TestChangeMismatchedAtItsFirstSendIsSentAgain(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, op := range []payments.Operation{payments.OpCapture, payments.OpCancel} {
			t.Run(string(op), func(t *testing.T) {
				d := stripedouble.New(stripedouble.Options{})
				t.Cleanup(d.Close)
				conn := stripeConnAs(t, d, testTimeout, "sk_test_double")
				m := &mismatchFirst{Connector: conn, d: d}
				b := processorSetup(t, db, m)
				b.conn = conn
				p := stripeCard(t, b, "first-mismatch-"+string(op), false)
				var res payments.ChangeResult
				var err error
				if op == payments.OpCapture {
					res, err = b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: p.ID, IdempotencyKey: "c-" + p.ID})
				} else {
					res, err = b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: p.ID, IdempotencyKey: "c-" + p.ID})
				}
				key, firstErr := m.first()
				if firstErr != nil || err != nil || res.Payment.PendingOperation != op {
					t.Fatalf("the key's first request: %v; the answer %+v, %v; want the %s pending", firstErr,
						res.Payment, err, op)
				}
				got := recoverUntil(t, b, p.ID, func(p payments.Payment) bool { return p.PendingOperation == "" })
				if _, err := d.RollForward(key); err == nil {
					t.Error("the key's first request, completed late, made something")
				}
				l, status := d.Ledger(got.ProcessorReference), d.Status(got.ProcessorReference)
				switch {
				case op == payments.OpCapture && (got.Status != payments.StatusCaptured || status != "succeeded" ||
					l.Captures != 1 || l.Captured != 1050):
					t.Errorf("%s; the double: %s %+v; want captured once, in full", got.Status, status, l)
				case op == payments.OpCancel && (got.Status != payments.StatusCanceled || status != "canceled" ||
					l.Cancels != 1 || l.Captures != 0):
					t.Errorf("%s; the double: %s %+v; want canceled once", got.Status, status, l)
				}
			})
		}
	})
}

// mismatchFirst is a Stripe connector that, before the first capture or
// cancel it sends, sends under the same key a capture of 0.01 that fails
// inside the double with its 500 stored: the key's first request at Stripe
// then had other parameters, so the change's own send is answered 400
// idempotency_error.
type mismatchFirst struct {
	*stripe.Connector
	d *stripedouble.Double

	mu       sync.Mutex
	key      string
	otherErr error
}

// first is the key the capture of 0.01 went under, and an error unless its
// answer was the 500 the double stored.
func (m *mismatchFirst) first() (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.key, m.otherErr
}

// other sends the capture of 0.01 under key, the first time only.
func (m *mismatchFirst) other(ctx context.Context, key, ref string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.key != "" {
		return
	}
	m.key = key
	m.d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
	_, err := m.Connector.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: key, Reference: ref,
		AmountMinor: 1, Currency: "BRL"})
	var pe *processor.Error
	if !errors.As(err, &pe) || pe.Kind != processor.KindServerError {
		m.otherErr = fmt.Errorf("the capture of 0.01 answered %v, want a 500", err)
	}
}

func (m *mismatchFirst) CapturePayment(ctx context.Context, req processor.CaptureRequest) (processor.Payment, error) {
	m.other(ctx, req.IdempotencyKey, req.Reference)
	return m.Connector.CapturePayment(ctx, req)
}

func (m *mismatchFirst) CancelPayment(ctx context.Context, req processor.CancelRequest) (processor.Payment, error) {
	m.other(ctx, req.IdempotencyKey, req.Reference)
	return m.Connector.CancelPayment(ctx, req)
}
