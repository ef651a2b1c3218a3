package payments_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/processor/stripe"
)

// asyncSandboxSetup is a bundle on the sandbox with SANDBOX_METHODS=async,
// both on the bundle's fake clock.
func asyncSandboxSetup(t *testing.T, db dbtest.DB) *bundle {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods, cfg.Timeout = processor.SandboxAsync, testTimeout
	svc := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: clock.Now,
		Processor: sandbox.New(cfg, sandbox.WithClock(clock.Now)), ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
	return &bundle{db: db, svc: svc, clock: clock}
}

// A sandbox Pix is PENDING with its code until its payer pays it; then
// CAPTURED with PAYMENT_CAPTURED, once. A boleto nobody pays is EXPIRED
// once the poller reads it past its expiry, with PAYMENT_EXPIRED.
func TestSandboxPixPaidAndBoletoExpired(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		pix := b.mustCreate(t, request("client-1", "pix-1", "25.00", "BRL", payments.MethodPix)).Payment
		if pix.Status != payments.StatusPending {
			t.Fatalf("a Pix is %s, want PENDING", pix.Status)
		}
		st, err := b.svc.AsyncStateOf(t.Context(), pix.ID)
		if err != nil || st.NextAction == nil || st.NextAction.Type != payments.NextActionPixCode || st.NextAction.PixCode == "" ||
			!st.NextAction.ExpiresAt.After(b.clock.Now()) {
			t.Fatalf("the Pix's next action: %+v, %v", st.NextAction, err)
		}
		if replay := b.mustCreate(t, request("client-1", "pix-1", "25.00", "BRL", payments.MethodPix)); !replay.Replayed ||
			replay.Payment.Status != payments.StatusPending {
			t.Errorf("the replay: %s, replayed %v", replay.Payment.Status, replay.Replayed)
		}

		paid, err := b.svc.PaySandbox(t.Context(), pix.ID)
		if err != nil || paid.Status != payments.StatusCaptured || paid.Captured != paid.Amount {
			t.Fatalf("paid: %s captured %s, %v", paid.Status, paid.Captured, err)
		}
		if st, _ := b.svc.AsyncStateOf(t.Context(), pix.ID); st.PaidAt.IsZero() {
			t.Error("a paid Pix has no paidAt")
		}
		if _, err := b.svc.PaySandbox(t.Context(), pix.ID); !errors.Is(err, payments.ErrStateConflict) {
			t.Errorf("paying it again: %v, want a state conflict", err)
		}
		if ev := b.events(t, pix.ID); ev["PAYMENT_PENDING"] != 1 || ev["PAYMENT_CAPTURED"] != 1 || ev["PAYMENT_CREATED"] != 0 {
			t.Errorf("the Pix's events: %v", ev)
		}

		boleto := b.mustCreate(t, request("client-1", "boleto-1", "99.90", "BRL", payments.MethodBoleto)).Payment
		if n, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil || n != 0 {
			t.Fatalf("a fresh boleto was polled: %d, %v", n, err)
		}
		b.clock.Advance(73 * time.Hour) // SANDBOX_BOLETO_EXPIRY is 72 h
		if n, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil || n != 1 {
			t.Fatalf("PollPending past the expiry: %d, %v", n, err)
		}
		got := b.mustGet(t, boleto.ID)
		if got.Status != payments.StatusExpired || got.Captured.Minor != 0 {
			t.Errorf("the unpaid boleto is %s, captured %s; want EXPIRED, nothing", got.Status, got.Captured)
		}
		if _, err := b.svc.PaySandbox(t.Context(), boleto.ID); !errors.Is(err, payments.ErrStateConflict) {
			t.Errorf("paying an expired boleto: %v, want a state conflict", err)
		}
		if ev := b.events(t, boleto.ID); ev["PAYMENT_EXPIRED"] != 1 {
			t.Errorf("the boleto's events: %v", ev)
		}
	})
}

// Through the Stripe connector: a Pix the payer pays is CAPTURED by the
// processor's event, applied once however often it comes; one whose event
// is lost is CAPTURED by the poller's read.
func TestStripePixByEventAndByPoll(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		byEvent := b.mustCreate(t, request("client-1", "pix-event", "10.00", "BRL", payments.MethodPix)).Payment
		byPoll := b.mustCreate(t, request("client-1", "pix-poll", "12.00", "BRL", payments.MethodPix)).Payment
		for _, p := range []payments.Payment{byEvent, byPoll} {
			if p.Status != payments.StatusPending || p.ProcessorReference == "" {
				t.Fatalf("a Stripe Pix is %s (reference %q), want PENDING", p.Status, p.ProcessorReference)
			}
			if err := d.Pay(p.ProcessorReference); err != nil {
				t.Fatal(err)
			}
		}
		for _, raw := range d.EventsFor(byEvent.ProcessorReference) {
			ev, err := stripe.DecodeEvent(raw.Body)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // repeated
				if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
					t.Fatalf("apply %s: %v", ev.Type, err)
				}
			}
		}
		if got := b.mustGet(t, byEvent.ID); got.Status != payments.StatusCaptured {
			t.Errorf("after its events the Pix is %s, want CAPTURED", got.Status)
		}
		if ev := b.events(t, byEvent.ID); ev["PAYMENT_CAPTURED"] != 1 {
			t.Errorf("its events: %v", ev)
		}
		if got := b.mustGet(t, byPoll.ID); got.Status != payments.StatusPending {
			t.Fatalf("without its event the Pix is %s before a poll", got.Status)
		}
		b.clock.Advance(6 * time.Minute)
		if _, err := b.svc.PollPending(t.Context(), 5*time.Minute, 10); err != nil {
			t.Fatal(err)
		}
		if got := b.mustGet(t, byPoll.ID); got.Status != payments.StatusCaptured {
			t.Errorf("after the poll the Pix is %s, want CAPTURED", got.Status)
		}
		if l := d.Ledger(byPoll.ProcessorReference); l.Captured != 1200 || l.Movements > 2 {
			t.Errorf("the double's ledger: %+v", l)
		}
	})
}

// Where Pix and boleto are paid later, capture: false is bad input for
// them: there is no authorization to capture. Paid at once (the default
// sandbox), they keep the v2 behaviour.
func TestAsyncMethodsRefuseCaptureFalse(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	later := asyncSandboxSetup(t, db)
	req := request("client-1", "pix-auth", "5.00", "BRL", payments.MethodPix)
	no := false
	req.Capture = &no
	var invalid *payments.InvalidInputError
	if _, err := later.svc.Create(t.Context(), req); !errors.As(err, &invalid) || invalid.Problems[0].Field != "capture" {
		t.Errorf("paid later, capture false: %v, want BAD_USER_INPUT on capture", err)
	}
	if got := later.count(t, "payments"); got != 0 {
		t.Errorf("%d payments stored", got)
	}
	atOnce := setup(t, dbtest.SQLite(t))
	if p := atOnce.mustCreate(t, req).Payment; p.Status != payments.StatusAuthorized {
		t.Errorf("paid at once, capture false: %s, want AUTHORIZED", p.Status)
	}
}

// The overview counts the payments of the window that wait for their payer
// or the processor, and those that ended with no money moved.
func TestRecentStatsCountUnsettledAndUnpaid(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		b.mustCreate(t, request("client-1", "pix-a", "1.00", "BRL", payments.MethodPix))
		b.mustCreate(t, request("client-1", "pix-b", "1.00", "BRL", payments.MethodPix))
		b.mustCreate(t, withToken(card("declined"), "pm_card_chargeDeclined"))
		b.mustCreate(t, withToken(card("approved"), "pm_card_visa"))
		st, err := b.svc.RecentStats(t.Context(), 24)
		if err != nil {
			t.Fatal(err)
		}
		if st.Unsettled[payments.StatusPending] != 2 || st.Unpaid[payments.StatusDeclined] != 1 || len(st.Unsettled)+len(st.Unpaid) != 2 {
			t.Errorf("unsettled %v, unpaid %v; want 2 PENDING and 1 DECLINED", st.Unsettled, st.Unpaid)
		}
	})
}

// An event about a payment that is not CMPay's is applied as nothing, so
// that it is not tried again for ever; one about a payment whose create is
// still unsettled is to be tried again.
func TestEventsAboutOthersAreIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, ev := range []processor.Event{
		{ID: "evt_1", Type: "payment_intent.succeeded", PaymentReference: "pi_someone_elses",
			Payment: &processor.Payment{Reference: "pi_someone_elses", State: processor.PaymentCaptured}},
		{ID: "evt_2", Type: "payment_intent.succeeded", PaymentReference: "pi_x",
			Payment: &processor.Payment{Reference: "pi_x", PaymentID: "pay_01NOTOURS0000000000000000", State: processor.PaymentCaptured}},
		{ID: "evt_3", Type: "refund.updated", PaymentReference: "pi_y"},
	} {
		if err := b.svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
			t.Errorf("%s: %v, want it applied as nothing", ev.ID, err)
		}
	}
	if got := b.count(t, "payment_events"); got != 0 {
		t.Errorf("%d events written", got)
	}
}

// A payment past its expiry that the processor still says is pending (a
// boleto paid on its last day clears days later) is read once a minute,
// not at every tick.
func TestExpiredButPendingIsReadOnceAMinute(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b, d := stripeSetup(t, db)
		p := b.mustCreate(t, request("client-1", "boleto-slow", "99.00", "BRL", payments.MethodBoleto)).Payment
		st, err := b.svc.AsyncStateOf(t.Context(), p.ID)
		if err != nil || st.NextAction == nil {
			t.Fatalf("next action: %+v, %v", st, err)
		}
		b.clock.Advance(st.NextAction.ExpiresAt.Sub(b.clock.Now()) + time.Second) // the double is not told: still pending
		reads := func() int { return d.Calls(stripedouble.GetPaymentIntent) }
		before := reads()
		for range 3 {
			if _, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil {
				t.Fatal(err)
			}
		}
		if got := reads() - before; got != 1 {
			t.Errorf("three polls within the minute read it %d times, want once", got)
		}
		b.clock.Advance(time.Minute + time.Second)
		if _, err := b.svc.PollPending(t.Context(), time.Hour, 10); err != nil {
			t.Fatal(err)
		}
		if got := reads() - before; got != 2 {
			t.Errorf("a minute later: %d reads in all, want 2", got)
		}
	})
}

// A Pix nobody pays is read as soon as its expiry passes, not once its
// last news (its creation) is a minute old: EXPIRED at the first poll past
// expiresAt, however short SANDBOX_PIX_EXPIRY is.
func TestAnUnpaidPixIsReadRightAfterItsExpiry(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
		cfg := processor.DefaultConfig()
		cfg.SandboxMethods, cfg.SandboxPixExpiry, cfg.Timeout = processor.SandboxAsync, 5*time.Second, testTimeout
		b := &bundle{db: db, clock: clock, svc: mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: clock.Now,
			Processor: sandbox.New(cfg, sandbox.WithClock(clock.Now)), ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})}
		pix := b.mustCreate(t, request("client-1", "pix-lag", "10.00", "BRL", payments.MethodPix)).Payment
		st, err := b.svc.AsyncStateOf(t.Context(), pix.ID)
		if err != nil || st.NextAction == nil {
			t.Fatalf("the Pix's next action: %+v, %v", st.NextAction, err)
		}
		if n, err := b.svc.PollPending(t.Context(), 5*time.Minute, 10); err != nil || n != 0 {
			t.Fatalf("a Pix before its expiry was polled: %d, %v", n, err)
		}
		b.clock.Advance(st.NextAction.ExpiresAt.Sub(b.clock.Now()) + time.Millisecond)
		if n, err := b.svc.PollPending(t.Context(), 5*time.Minute, 10); err != nil || n != 1 {
			t.Fatalf("PollPending just past the expiry: %d, %v; want the Pix read", n, err)
		}
		if got := b.mustGet(t, pix.ID); got.Status != payments.StatusExpired {
			t.Errorf("the unpaid Pix just past its expiry is %s, want EXPIRED", got.Status)
		}
	})
}
