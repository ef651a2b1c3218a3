package payments_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
)

// namedCounter records what a connection sends, each statement by its
// name in sql/common.sql, else by its first word (BEGIN, COMMIT, WITH).
type namedCounter struct {
	mu    sync.Mutex
	sent  []string
	count bool
}

func (c *namedCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	name := payments.StatementName(data.SQL)
	if name == "" {
		name = strings.Fields(data.SQL)[0]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.count {
		c.sent = append(c.sent, name)
	}
	return ctx
}

func (*namedCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// measure returns what fn sent.
func (c *namedCounter) measure(fn func()) []string {
	c.mu.Lock()
	c.sent, c.count = nil, true
	c.mu.Unlock()
	fn()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = false
	return c.sent
}

// TestStripeChangeRoundTrips pins how many statements a capture, cancel
// and refund through the Stripe connector send to PostgreSQL, and that
// only one whose call settles nothing reads its operation's state again
// (askChange's answer as the operation stands). A change that adds a
// statement to the common path fails here: make it cheaper, or raise the
// number knowingly.
func TestStripeChangeRoundTrips(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	counter := &namedCounter{}
	traced, err := database.Open(db.URL, database.Options{Tracer: counter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(traced) })
	d := stripedouble.New(stripedouble.Options{})
	t.Cleanup(d.Close)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	svc := mustService(t, traced, payments.Config{KeyTTL: testTTL, Now: clock.Now, Processor: stripeConn(t, d, testTimeout),
		ProcessorTimeout: testTimeout, RecoveryAfter: testRecovery})
	b := &bundle{svc: svc, clock: clock}

	type change struct {
		name string
		do   func(key string) (payments.ChangeResult, error)
	}
	changes := func(round string) []change {
		authorized := []payments.Payment{stripeCard(t, b, "create "+round+" capture", false),
			stripeCard(t, b, "create "+round+" cancel", false)}
		captured := stripeCard(t, b, "create "+round+" refund", true)
		return []change{
			{"capture", func(key string) (payments.ChangeResult, error) {
				return svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: authorized[0].ID, IdempotencyKey: key})
			}},
			{"cancel", func(key string) (payments.ChangeResult, error) {
				return svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: authorized[1].ID, IdempotencyKey: key})
			}},
			{"refund", func(key string) (payments.ChangeResult, error) {
				return b.refund(t, captured.ID, key, new("1"))
			}},
		}
	}
	// Warm the connections up: a statement's first run prepares it.
	for _, round := range []string{"warm-up 1", "warm-up 2"} {
		for _, c := range changes(round) {
			if _, err := c.do(round + " " + c.name); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
	}
	// Asked, answered, settled: phase 1's transaction (BEGIN, lock, key,
	// the pending mark or the refund and its reservation, the key's claim,
	// the operation, the attempt, COMMIT), then phase 3's: BEGIN, the
	// call, the operation, the payment and the key of its event (a
	// refund: the refund, the payment, the refund read back, which is the
	// answer's), the event, the attempt, COMMIT. A call that settles
	// nothing: phase 1, then BEGIN, the call, the operation postponed for
	// recovery, the payment, COMMIT, the operation's state read again, and
	// a refund read.
	for _, tt := range []struct {
		name  string
		fault bool
		want  map[string]int
		state int // how many times operation_state is sent
	}{
		{"settled", false, map[string]int{"capture": 16, "cancel": 16, "refund": 18}, 0},
		{"unknown", true, map[string]int{"capture": 14, "cancel": 14, "refund": 16}, 1},
	} {
		for _, c := range changes(tt.name) {
			if tt.fault {
				ep := map[string]stripedouble.Endpoint{"capture": stripedouble.CapturePaymentIntent,
					"cancel": stripedouble.CancelPaymentIntent, "refund": stripedouble.CreateRefund}[c.name]
				d.FailNext(ep, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
			}
			sent := counter.measure(func() {
				if _, err := c.do(tt.name + " " + c.name); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			})
			state := strings.Count(" "+strings.Join(sent, " ")+" ", " operation_state ")
			if len(sent) != tt.want[c.name] || state != tt.state {
				t.Errorf("%s %s: %d statements %v, want %d with operation_state %d times",
					c.name, tt.name, len(sent), sent, tt.want[c.name], tt.state)
			}
		}
	}
}

// TestSandboxChangesTakeOneStatement: at the sandbox, a capture or refund
// of a payment with nothing in flight (what make bench's capture and
// refund modes send) is the batch statement alone; the phased way
// (askChange) is not taken.
func TestSandboxChangesTakeOneStatement(t *testing.T) {
	t.Parallel()
	svc, counter, _ := tracedService(t, payments.Config{KeyTTL: testTTL})
	create := func(key string, capture bool) payments.Payment {
		req := withToken(card(key), "pm_card_visa")
		req.Capture = &capture
		res, err := svc.Create(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Payment
	}
	for i, round := range []string{"warm-up 1", "warm-up 2", "measured"} {
		authorized, captured := create("create "+round+" capture", false), create("create "+round+" refund", true)
		for _, c := range []struct {
			name string
			do   func() (payments.ChangeResult, error)
		}{
			{"capture", func() (payments.ChangeResult, error) {
				return svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: authorized.ID, IdempotencyKey: round + " capture"})
			}},
			{"refund", func() (payments.ChangeResult, error) {
				amount := "0.01"
				return svc.Refund(t.Context(), payments.RefundRequest{PaymentID: captured.ID, Amount: &amount,
					IdempotencyKey: round + " refund"})
			}},
		} {
			sent := counter.measure(func() {
				if _, err := c.do(); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			})
			if i == 2 && len(sent) != 1 {
				t.Errorf("%s at the sandbox: %d statements %v, want 1", c.name, len(sent), sent)
			}
		}
	}
}
