package payments

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// A request's call ends within PROCESSOR_TIMEOUT of when its operation's
// lease was set, not of when the call starts: the statement that stored
// the operation may have waited (for SQLite's write lock, a row lock), and
// a call that outlived the lease could meet recovery's on another
// instance. The wait is the clock moved between the two phases.
func TestRequestCallEndsBeforeItsLease(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		l := newLeased(t, db)
		p := l.create(t, "auth", false, StatusAuthorized)
		if left := l.proc.got(); len(left) != 1 || left[0] > time.Second {
			t.Fatalf("the create's call had %v left, want one with at most the timeout", left)
		}
		st := l.startCapture(t, p.ID)
		l.clock.Add(600 * time.Millisecond)
		got, err := l.s.askChange(t.Context(), st)
		if err != nil || got.Payment.Status != StatusCaptured {
			t.Fatalf("the capture: %s, %v", got.Payment.Status, err)
		}
		if left := l.proc.got(); len(left) != 1 || left[0] > 400*time.Millisecond {
			t.Errorf("the capture's call had %v left, want one with at most the 400 ms its lease left", left)
		}
	})
}

// An instance whose claim on an operation ran out while it was busy with
// others does not ask for it: another instance that claimed it since does,
// alone.
func TestResolveSkipsAnOperationTakenOver(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		conn, d := doubledStripe(t)
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		newSvc := func() *Service {
			s, err := NewService(db.Gorm, Config{Processor: conn, ProcessorTimeout: time.Second, RecoveryAfter: time.Second, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		a, b := newSvc(), newSvc()
		d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		tok := "pm_card_visa"
		res, err := a.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: "k", Amount: "10", Currency: "BRL",
			Method: MethodCreditCard, PaymentMethodToken: &tok, Origin: Origin{Transport: "test"}})
		if err != nil || res.Payment.Status != StatusProcessing {
			t.Fatalf("create: %s, %v", res.Payment.Status, err)
		}
		now = now.Add(time.Minute)
		ids, err := a.store.claimDue(t.Context(), a.instance, now.Add(time.Second), now, 1, a.processorNames())
		if err != nil || len(ids) != 1 {
			t.Fatalf("a's claim: %v, %v", ids, err)
		}
		now = now.Add(time.Minute) // a's lease runs out while it works on others
		if taken, err := b.store.claimDue(t.Context(), b.instance, now.Add(time.Minute), now, 1, b.processorNames()); err != nil || len(taken) != 1 {
			t.Fatalf("b's claim: %v, %v", taken, err)
		}
		before := d.Calls(stripedouble.CreatePaymentIntent)
		if err := a.resolve(t.Context(), ids[0]); err != nil {
			t.Fatal(err)
		}
		if got := d.Calls(stripedouble.CreatePaymentIntent); got != before {
			t.Errorf("a asked for an operation b holds: %d calls, want %d", got, before)
		}
		if err := b.resolve(t.Context(), ids[0]); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := b.store.readPayment(t.Context(), res.Payment.ID); got.Status != StatusCaptured {
			t.Errorf("b's resolution: %s, want CAPTURED", got.Status)
		}
	})
}

// A renewal of recovery's lease that waited (for SQLite's write lock, a row
// lock) leaves the call less time: it ends when the lease's time for it
// does, never after the lease, and with less than half of
// PROCESSOR_TIMEOUT left no call is made at all, and that is logged and
// counted (OnLeaseLate): the operation waits for the next claim once the
// lease has run out, which asks with the whole timeout. The waits are the
// clock moved as the renewal returns.
func TestResolveCallEndsBeforeItsLease(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		l := newLeased(t, db)
		s, proc, logs := l.s, l.proc, &l.logs
		pending := func(key string) string {
			l.d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
			return l.create(t, key, true, StatusProcessing).ID
		}
		claimAndResolve := func(renewal time.Duration) {
			t.Helper()
			id := l.claimOne(t)
			s.leaseSet = func() { l.clock.Add(renewal) }
			defer func() { s.leaseSet = nil }()
			if err := s.resolve(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		}

		id := pending("slow-renewal")
		proc.reset()
		claimAndResolve(600 * time.Millisecond) // 400 ms left: under half the timeout
		if left := proc.got(); len(left) != 0 {
			t.Fatalf("asked with %v left of the lease's call time, want no call", left)
		}
		if p, _, _ := s.store.readPayment(t.Context(), id); p.Status != StatusProcessing {
			t.Fatalf("after no call: %s, want PROCESSING", p.Status)
		}
		if text := logs.String(); !strings.Contains(text, "class="+classLeaseLate) || !strings.Contains(text, "payment_id="+id) {
			t.Errorf("no call made, and no line says so; logged:\n%s", text)
		}
		if got := l.lateOps(); !slices.Equal(got, []Operation{OpCreate}) {
			t.Errorf("no call made, counted late %v; want the create once", got)
		}
		claimAndResolve(0) // the next claim, the lease long over
		if left := proc.got(); len(left) != 1 || left[0] > time.Second {
			t.Fatalf("next claim's calls had %v left, want one with at most the timeout", left)
		}
		if p, _, _ := s.store.readPayment(t.Context(), id); p.Status != StatusCaptured {
			t.Errorf("after the next claim: %s, want CAPTURED", p.Status)
		}

		pending("slower-renewal")
		proc.reset()
		claimAndResolve(300 * time.Millisecond)
		if left := proc.got(); len(left) != 1 || left[0] > 700*time.Millisecond {
			t.Errorf("calls had %v left, want one with at most the 700 ms the renewal left", left)
		}
		if got := l.lateOps(); len(got) != 0 {
			t.Errorf("calls made, and counted late %v; want none", got)
		}
	})
}

// Sending again under a new key after a stored error is bound the same
// way: when storing the key took so long that under half the timeout is
// left, nothing is sent, and the next claim sends under the new key.
func TestSendAgainCallEndsBeforeItsLease(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		l := newLeased(t, db)
		s, d, clock := l.s, l.d, l.clock
		p := l.create(t, "k", false, StatusAuthorized)
		d.FailNext(stripedouble.CapturePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
		if _, err := s.Capture(t.Context(), CaptureRequest{PaymentID: p.ID, IdempotencyKey: "cap"}); err != nil {
			t.Fatal(err)
		}
		// The first round asks again with the key and is answered the
		// stored 500; the next reads, finds the capture not done, and
		// stores a new key.
		clock.Add(time.Minute)
		if _, err := s.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		before := len(d.Keys(stripedouble.CapturePaymentIntent))
		// The first statement to set a lease is the renewal (no wait), the
		// second the new key's (a wait of 600 ms: 400 ms left).
		var sets int
		s.leaseSet = func() {
			if sets++; sets == 2 {
				clock.Add(600 * time.Millisecond)
			}
		}
		clock.Add(time.Minute)
		if _, err := s.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		if sets != 2 {
			t.Fatalf("%d leases set, want the renewal's and the new key's", sets)
		}
		if keys := d.Keys(stripedouble.CapturePaymentIntent)[before:]; len(keys) != 0 {
			t.Fatalf("sent %q with under half the timeout left, want nothing", keys)
		}
		if got := l.lateOps(); !slices.Equal(got, []Operation{OpCapture}) {
			t.Errorf("nothing sent, counted late %v; want the capture once", got)
		}
		s.leaseSet = nil
		clock.Add(time.Minute)
		if _, err := s.RecoverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		keys := d.Keys(stripedouble.CapturePaymentIntent)
		if len(keys) != before+1 || keys[before] != keys[before-1]+"_a2" {
			t.Errorf("keys sent %q, want one more: the first's _a2", keys)
		}
		if got, _, _ := s.store.readPayment(t.Context(), p.ID); got.Status != StatusCaptured {
			t.Errorf("after the next claim: %s, want CAPTURED", got.Status)
		}
	})
}

// leased is a service paying through the Stripe double, whose calls'
// deadlines proc notes, on a clock the test moves, with a one-second
// PROCESSOR_TIMEOUT: what the lease tests share. late notes the
// operations OnLeaseLate is told of.
type leased struct {
	s     *Service
	proc  *deadlines
	d     *stripedouble.Double
	clock *stripedouble.ManualClock
	logs  logtest.Buffer
	mu    sync.Mutex
	late  []Operation
}

func newLeased(t *testing.T, db dbtest.DB) *leased {
	t.Helper()
	conn, d := doubledStripe(t)
	l := &leased{proc: &deadlines{Connector: conn}, d: d, clock: stripedouble.NewManualClock(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))}
	s, err := NewService(db.Gorm, Config{Processor: l.proc, ProcessorTimeout: time.Second, RecoveryAfter: time.Second,
		Now: l.clock.Now, Logger: slog.New(slog.NewTextHandler(&l.logs, nil)), OnLeaseLate: func(op Operation) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.late = append(l.late, op)
		}})
	if err != nil {
		t.Fatal(err)
	}
	l.s = s
	return l
}

// lateOps is the operations counted late since it was last called.
func (l *leased) lateOps() []Operation {
	l.mu.Lock()
	defer l.mu.Unlock()
	late := l.late
	l.late = nil
	return late
}

// create makes a card payment under key, authorized only unless capture,
// and fails the test unless it is want.
func (l *leased) create(t *testing.T, key string, capture bool, want Status) Payment {
	t.Helper()
	tok := "pm_card_visa"
	res, err := l.s.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: key, Amount: "10", Currency: "BRL",
		Method: MethodCreditCard, PaymentMethodToken: &tok, Capture: &capture, Origin: Origin{Transport: "test"}})
	if err != nil || res.Payment.Status != want {
		t.Fatalf("create %s: %s, %v; want %s", key, res.Payment.Status, err, want)
	}
	return res.Payment
}

// startCapture runs phase 1 of a capture of id (its operation stored and
// leased), as the request would, and returns it for askChange.
func (l *leased) startCapture(t *testing.T, id string) started {
	t.Helper()
	cmd, err := CaptureRequest{PaymentID: id, IdempotencyKey: "capture", Origin: Origin{Transport: "test"}}.command()
	if err != nil {
		t.Fatal(err)
	}
	var st started
	if err := l.s.store.db().Tx(t.Context(), func(r sqlq.Runner) error {
		st, err = l.s.startChange(t.Context(), r, cmd)
		return err
	}); err != nil || st.err != nil {
		t.Fatalf("phase 1: %v, %v", err, st.err)
	}
	return st
}

// claimOne moves the clock a minute on and claims the one operation then
// due, as recovery's round would.
func (l *leased) claimOne(t *testing.T) string {
	t.Helper()
	l.clock.Add(time.Minute)
	now := l.clock.Now()
	ids, err := l.s.store.claimDue(t.Context(), l.s.instance, now.Add(l.s.timeout+leaseMargin), now, 1, l.s.processorNames())
	if err != nil || len(ids) != 1 {
		t.Fatalf("claim: %v, %v", ids, err)
	}
	return ids[0]
}

// deadlines is a Stripe connector that notes how long each create's
// context had left as the call began.
type deadlines struct {
	*stripe.Connector
	mu   sync.Mutex
	left []time.Duration
}

func (p *deadlines) CreatePayment(ctx context.Context, req processor.CreatePaymentRequest) (processor.Payment, error) {
	p.note(ctx)
	return p.Connector.CreatePayment(ctx, req)
}

func (p *deadlines) CapturePayment(ctx context.Context, req processor.CaptureRequest) (processor.Payment, error) {
	p.note(ctx)
	return p.Connector.CapturePayment(ctx, req)
}

func (p *deadlines) note(ctx context.Context) {
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	p.mu.Lock()
	p.left = append(p.left, left)
	p.mu.Unlock()
}

func (p *deadlines) got() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	left := p.left
	p.left = nil
	return left
}

func (p *deadlines) reset() { p.got() }

// doubledStripe is the Stripe connector against a double of its own, with
// a one-second timeout; both end with the test.
func doubledStripe(t *testing.T) (*stripe.Connector, *stripedouble.Double) {
	t.Helper()
	d := stripedouble.New(stripedouble.Options{})
	t.Cleanup(d.Close)
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, "sk_test_double", d.URL(), time.Second
	conn, err := stripe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	return conn, d
}

// A call never gets more than PROCESSOR_TIMEOUT, however the clock moved
// since its lease was set: the service's clock is the wall clock plus the
// database's offset, either of which may step back (NTP, a new
// measurement), and a call given the step as well would outlive its lease
// by it. The step is the clock moved back between a capture's two phases,
// and as a recovery's renewal returns.
func TestCallTimeNeverPassesTheTimeout(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		l := newLeased(t, db)
		p := l.create(t, "auth", false, StatusAuthorized)
		l.proc.reset()
		st := l.startCapture(t, p.ID)
		l.clock.Add(-10 * time.Second)
		if got, err := l.s.askChange(t.Context(), st); err != nil || got.Payment.Status != StatusCaptured {
			t.Fatalf("the capture: %s, %v", got.Payment.Status, err)
		}
		if left := l.proc.got(); len(left) != 1 || left[0] > time.Second {
			t.Errorf("the capture's call had %v left after a step back, want one with at most the timeout", left)
		}

		l.d.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		l.create(t, "pending", true, StatusProcessing)
		l.proc.reset()
		id := l.claimOne(t)
		l.s.leaseSet = func() { l.clock.Add(-10 * time.Second) }
		if err := l.s.resolve(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if left := l.proc.got(); len(left) != 1 || left[0] > time.Second {
			t.Errorf("recovery's call had %v left after a step back, want one with at most the timeout", left)
		}
	})
}
