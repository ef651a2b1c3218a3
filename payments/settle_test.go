package payments

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

// hookedProcessor runs after once, the first time a create has been
// answered, before the answer goes back.
type hookedProcessor struct {
	processor.Processor
	once  sync.Once
	after func()
}

func (h *hookedProcessor) CreatePayment(ctx context.Context, req processor.CreatePaymentRequest) (processor.Payment, error) {
	p, err := h.Processor.CreatePayment(ctx, req)
	h.once.Do(h.after)
	return p, err
}

// A create whose operation another instance settled between the call and
// the request's own settling (its lease ran out meanwhile) is answered
// with the payment as the other left it: its call recorded, the payment
// settled once, with one event.
func TestSettleFindsTheOperationSettledAlready(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		conn, d := doubledStripe(t)
		var mu sync.Mutex
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		newSvc := func(proc processor.Processor) *Service {
			s, err := NewService(db.Gorm, Config{Processor: proc, ProcessorTimeout: time.Second, RecoveryAfter: time.Second, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		other := newSvc(conn)
		var resolved error
		hooked := &hookedProcessor{Processor: conn, after: func() {
			mu.Lock()
			now = now.Add(time.Hour) // the request's lease runs out
			mu.Unlock()
			ids, err := other.store.claimDue(t.Context(), other.instance, clock().Add(time.Minute), clock(), 1, other.processorNames())
			if err != nil || len(ids) != 1 {
				t.Errorf("other's claim: %v, %v", ids, err)
				return
			}
			resolved = other.resolve(t.Context(), ids[0])
		}}
		svc := newSvc(hooked)
		tok := "pm_card_visa"
		res, err := svc.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: "k", Amount: "10", Currency: "BRL",
			Method: MethodCreditCard, PaymentMethodToken: &tok, Origin: Origin{Transport: "test"}})
		if err != nil || resolved != nil {
			t.Fatalf("create: %v; the other's resolution: %v", err, resolved)
		}
		p := res.Payment
		if p.Status != StatusCaptured || p.ProcessorReference == "" {
			t.Errorf("answer %s %q, want CAPTURED with its intent", p.Status, p.ProcessorReference)
		}
		if ids := d.IntentsFor(p.ID); len(ids) != 1 || d.Ledger(ids[0]).Captures != 1 {
			t.Errorf("intents %v, want one captured once", ids)
		}
		count := func(table string) int64 {
			var n int64
			if err := db.Gorm.Table(table).Where("payment_id = ?", p.ID).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if calls, events := count("processor_calls"), count("payment_events"); calls != 2 || events != 1 {
			t.Errorf("%d calls and %d events, want 2 (the request's and the other's) and 1", calls, events)
		}
	})
}

// TestSettleRunAgainWritesTheCallOnce: the batcher runs a settle
// statement again, with the same jobs, when its answer was lost, after
// its commit perhaps. The second run settles nothing (the operation is
// settled already) and writes no second call: processorCalls lists the
// processor's answer once.
func TestSettleRunAgainWritesTheCallOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		conn, d := doubledStripe(t)
		svc, err := NewService(db.Gorm, Config{Processor: conn, ProcessorTimeout: time.Second, RecoveryAfter: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		cs, ok := svc.store.(createSettler)
		if !ok {
			t.Skip("SQLite records each answer in a transaction of its own (record), never run again")
		}
		// A payment left PROCESSING: its create's answer not known.
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		tok := "pm_card_visa"
		res, err := svc.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: "k", Amount: "10", Currency: "BRL",
			Method: MethodCreditCard, PaymentMethodToken: &tok, Origin: Origin{Transport: "test"}})
		if err != nil || res.Payment.Status != StatusProcessing {
			t.Fatalf("create: %v, %s; want PROCESSING", err, res.Payment.Status)
		}
		p := res.Payment
		calls := func() int {
			cs, err := svc.ProcessorCallsOf(t.Context(), []Payment{p})
			if err != nil {
				t.Fatal(err)
			}
			return len(cs[0])
		}
		before := calls()
		id := createOpID(p.ID)
		j := &settleJob{op: operationRow{id: id, paymentID: p.ID, operation: OpCreate, key: opKey(id)},
			out:  outcome{settled: true, opState: opSucceeded, status: StatusAuthorized, reference: "pi_later", call: CallSucceeded},
			took: 3 * time.Millisecond, callID: "call_once", answer: make(chan settleAnswer, 1)}
		for run, wantSettled := range []bool{true, false} {
			if err := cs.settleCreates(t.Context(), []*settleJob{j}); err != nil {
				t.Fatalf("run %d: %v", run+1, err)
			}
			if a := <-j.answer; a.err != nil || a.settled != wantSettled {
				t.Fatalf("run %d answered %+v; want settled %v", run+1, a, wantSettled)
			}
		}
		if got := calls(); got != before+1 {
			t.Errorf("%d calls listed after the statement ran twice, %d before; want one more", got, before)
		}
	})
}
