package events_test

import (
	"testing"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

// A Pix's events show its payment as it was at each: the PAYMENT_PENDING
// one with its next action and no paidAt, the PAYMENT_CAPTURED one with
// when it was paid; AsyncStatesOf (GraphQL's nextAction, paidAt) agrees.
func TestPaidLaterEventsShowTheirTime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newEnv(t, db, events.Options{})
		cfg := processor.DefaultConfig()
		cfg.SandboxMethods = processor.SandboxAsync
		svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := svc.Create(t.Context(), payments.CreateRequest{ClientID: "client-1", IdempotencyKey: "pix-events",
			Amount: "12.00", Currency: "BRL", Method: payments.MethodPix, Origin: origin})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.PaySandbox(t.Context(), res.Payment.ID); err != nil {
			t.Fatal(err)
		}
		e.ev.Wake()
		got := collect(t, e.ev, events.Filter{PaymentID: res.Payment.ID}, 0, 2)
		pending, paid := got[0], got[1]
		if pending.Type != payments.EventPending || pending.Payment.NextAction == nil || !pending.Payment.PaidAt.IsZero() {
			t.Errorf("the PENDING event: %s, next action %+v, paidAt %v", pending.Type, pending.Payment.NextAction, pending.Payment.PaidAt)
		}
		if paid.Type != payments.EventCaptured || paid.Payment.PaidAt.IsZero() {
			t.Errorf("the CAPTURED event: %s, paidAt %v", paid.Type, paid.Payment.PaidAt)
		}
		// What GraphQL resolves nextAction and paidAt of an event's payment
		// from: the event's, not the payment's as it is now.
		states, err := svc.AsyncStatesOf(t.Context(), []payments.Payment{pending.Payment, paid.Payment})
		if err != nil {
			t.Fatal(err)
		}
		if states[0].NextAction == nil || !states[0].PaidAt.IsZero() || !states[1].PaidAt.Equal(paid.Payment.PaidAt) {
			t.Errorf("the events' async states: %+v, %+v", states[0], states[1])
		}
	})
}
