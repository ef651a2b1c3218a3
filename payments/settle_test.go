package payments

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
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

// processingPayment is a card payment made through the Stripe double whose
// create's answer was not known (a 500 before processing): PROCESSING,
// its operation unsettled. It skips the test on SQLite, whose store has no
// settle statement (each answer is recorded by a transaction of its own,
// record, never run again).
func processingPayment(t *testing.T, db dbtest.DB) (*Service, createSettler, Payment) {
	t.Helper()
	conn, d := doubledStripe(t)
	svc, err := NewService(db.Gorm, Config{Processor: conn, ProcessorTimeout: time.Second, RecoveryAfter: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := svc.store.(createSettler)
	if !ok {
		t.Skip("SQLite records each answer in a transaction of its own (record), never run again")
	}
	d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
	tok := "pm_card_visa"
	res, err := svc.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: "k", Amount: "10", Currency: "BRL",
		Method: MethodCreditCard, PaymentMethodToken: &tok, Origin: Origin{Transport: "test"}})
	if err != nil || res.Payment.Status != StatusProcessing {
		t.Fatalf("create: %v, %s; want PROCESSING", err, res.Payment.Status)
	}
	return svc, cs, res.Payment
}

// settleJobFor is the answer that settles p's create as AUTHORIZED, in a
// call named callID.
func settleJobFor(p Payment, callID string) *settleJob {
	id := createOpID(p.ID)
	return &settleJob{op: operationRow{id: id, paymentID: p.ID, operation: OpCreate, key: opKey(id)},
		out:  outcome{settled: true, opState: opSucceeded, status: StatusAuthorized, reference: "pi_later", call: CallSucceeded},
		took: 3 * time.Millisecond, callID: callID, answer: make(chan settleAnswer, 1)}
}

// callsOf counts the calls processorCalls lists for p.
func callsOf(t *testing.T, svc *Service, p Payment) int {
	t.Helper()
	cs, err := svc.ProcessorCallsOf(t.Context(), []Payment{p})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs[0])
}

// TestSettleRunAgainWritesTheCallOnce: the batcher runs a settle
// statement again, with the same jobs, when its answer was lost, after
// its commit perhaps. The second run settles nothing (the operation is
// settled already) and writes no second call: processorCalls lists the
// processor's answer once.
func TestSettleRunAgainWritesTheCallOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		svc, cs, p := processingPayment(t, db)
		before := callsOf(t, svc, p)
		j := settleJobFor(p, "call_once")
		for run, wantSettled := range []bool{true, false} {
			if err := cs.settleCreates(t.Context(), []*settleJob{j}); err != nil {
				t.Fatalf("run %d: %v", run+1, err)
			}
			if a := <-j.answer; a.err != nil || a.settled != wantSettled {
				t.Fatalf("run %d answered %+v; want settled %v", run+1, a, wantSettled)
			}
		}
		if got := callsOf(t, svc, p); got != before+1 {
			t.Errorf("%d calls listed after the statement ran twice, %d before; want one more", got, before)
		}
	})
}

// TestSettleRunsOverlappingWriteTheCallOnce: the batcher may run a settle
// statement again while the first run is still in PostgreSQL (its
// deadline passed, its commit still to come). The second run waits for
// the first's end at the call's id and writes no second call.
func TestSettleRunsOverlappingWriteTheCallOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		svc, cs, p := processingPayment(t, db)
		st := svc.store.(*postgresStore)
		before := callsOf(t, svc, p)
		j := settleJobFor(p, "call_overlap")
		again := make(chan error, 1)
		err := st.pg.Tx(t.Context(), func(r sqlq.Runner) error {
			// The first run, left uncommitted while the second starts.
			args := append(settleArgs([]*settleJob{j}), st.now())
			if err := r.Query(t.Context(), postgresSQL.SQL("settle_create_batch"), args, func(sqlq.Row) error { return nil }); err != nil {
				return err
			}
			go func() { again <- cs.settleCreates(t.Context(), []*settleJob{j}) }()
			return waitForLockWait(t, db)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-again; err != nil {
			t.Fatalf("the second run: %v", err)
		}
		if a := <-j.answer; a.err != nil || a.settled {
			t.Errorf("the second run answered %+v; want the operation found settled", a)
		}
		if got := callsOf(t, svc, p); got != before+1 {
			t.Errorf("%d calls listed after two overlapping runs, %d before; want one more", got, before)
		}
	})
}

// waitForLockWait waits until a session of db's database waits for a lock
// (the second run, for the first's transaction).
func waitForLockWait(t *testing.T, db dbtest.DB) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := db.Gorm.Raw(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	return errors.New("the second run never waited for the first")
}
