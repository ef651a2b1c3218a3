package integration_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// TestKilledBetweenTheProcessorAndTheCommit: two server processes on one
// database, on either dialect. A create, a capture and a refund sent to
// the first are carried out by the Stripe double, whose answers are held;
// the first process is SIGKILLed while all three wait, so that it never
// records what the processor did. The second process's recovery takes the
// operations over once the dead one's leases run out, asks again with the
// same keys, and settles each as the processor holds it: one intent, one
// capture, one refund, and the clients' retries replay them.
func TestKilledBetweenTheProcessorAndTheCommit(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			double := stripedouble.New(stripedouble.Options{})
			t.Cleanup(double.Close)
			// The dead process's leases hold for PROCESSOR_TIMEOUT and 5 s
			// more (payments' leaseMargin), most of the test's time; the
			// timeout is the part a test may shorten. It must still outlast
			// the wait for the three calls to reach the double
			// (milliseconds on loopback), so that the kill, not the
			// timeout, ends them: checked below, none was recorded.
			env := []string{"PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_killed", "STRIPE_API_BASE=" + double.URL(),
				"PROCESSOR_TIMEOUT=1s", "PROCESSOR_RECOVERY_AFTER=500ms", "STRIPE_SEARCH_LAG=100ms"}
			// The second starts once the first listens, and is waited for
			// only once the first is dead: its start (its migration, which
			// would wait for the first's) overlaps the leases' time.
			first, db := startOnEmpty(t, dialect, env...)
			starting := launch(t, db.URL, env...)
			to := func(p *process) func(int) string { return func(int) string { return p.url } }

			type created struct {
				CreatePayment struct{ Payment struct{ ID, Status string } }
			}
			create := func(url func(int) string, key string, capture bool) created {
				var c created
				retryFinal(t, url, createMutation, map[string]any{"key": key, "capture": capture}, &c, &retriedAnswers{})
				return c
			}
			authorized := create(to(first), "killed-authorized", false).CreatePayment.Payment.ID
			captured := create(to(first), "killed-captured", true).CreatePayment.Payment.ID
			if t.Failed() {
				return
			}

			hold := make(chan struct{})
			held := stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold}
			double.FailNext(stripedouble.CreatePaymentIntent, held)
			double.FailNext(stripedouble.CapturePaymentIntent, held)
			double.FailNext(stripedouble.CreateRefund, held)
			creates := double.Calls(stripedouble.CreatePaymentIntent)
			captureOp := `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, idempotencyKey: $key) { payment { status } } }`
			refundOp := `mutation($id: ID!, $key: String!) { refundPayment(paymentId: $id, amount: "5.00", idempotencyKey: $key) { refund { id status } } }`
			var wg sync.WaitGroup
			for _, send := range []func(){
				func() { _, _ = gql(first.url, createMutation, map[string]any{"key": "killed-new", "capture": true}) },
				func() { _, _ = gql(first.url, captureOp, map[string]any{"id": authorized, "key": "killed-capture"}) },
				func() { _, _ = gql(first.url, refundOp, map[string]any{"id": captured, "key": "killed-refund"}) },
			} {
				wg.Go(send)
			}
			sent := time.Now()
			waitUntil(t, "the three calls at the processor", 10*time.Second, 5*time.Millisecond, func() bool {
				return double.Calls(stripedouble.CreatePaymentIntent) == creates+1 &&
					double.Calls(stripedouble.CapturePaymentIntent) == 1 && double.Calls(stripedouble.CreateRefund) == 1
			})
			if err := first.cmd.Process.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killedAfter := time.Since(sent)
			first.exited <- <-first.exited
			wg.Wait() // each got no answer: its server is gone
			close(hold)
			// Each call was ended by the kill, not by its timeout: none
			// was recorded, so recovery alone learns what they did.
			var unrecorded int
			if err := db.Gorm.Raw(`SELECT COUNT(*) FROM processor_operations o WHERE o.state = 'PENDING'
				AND NOT EXISTS (SELECT 1 FROM processor_calls c WHERE c.operation_id = o.id)`).Scan(&unrecorded).Error; err != nil {
				t.Fatal(err)
			}
			if unrecorded != 3 {
				t.Fatalf("%d of the three operations recorded by the first process, killed %s after they were sent: "+
					"their calls ended by PROCESSOR_TIMEOUT, not by the kill", 3-unrecorded, killedAfter)
			}
			second := starting.ready(t)

			waitUntil(t, "every processor operation resolved", 30*time.Second, 50*time.Millisecond, func() bool {
				return countOpen(t, db) == 0
			})
			checkAgainstLedger(t, db, double, 3)

			// The clients' retries, with their keys, on the process left.
			again := create(to(second), "killed-new", true).CreatePayment.Payment
			var capture struct {
				CapturePayment struct{ Payment struct{ Status string } }
			}
			retryFinal(t, to(second), captureOp, map[string]any{"id": authorized, "key": "killed-capture"}, &capture, &retriedAnswers{})
			var refund struct {
				RefundPayment struct{ Refund struct{ ID, Status string } }
			}
			retryFinal(t, to(second), refundOp, map[string]any{"id": captured, "key": "killed-refund"}, &refund, &retriedAnswers{})
			if again.Status != "CAPTURED" || capture.CapturePayment.Payment.Status != "CAPTURED" ||
				refund.RefundPayment.Refund.Status != "SUCCEEDED" {
				t.Errorf("retried after recovery: create %+v, capture %+v, refund %+v; want CAPTURED, CAPTURED, SUCCEEDED",
					again, capture, refund)
			}
			var calls []struct{ Operation, Outcome string }
			db.Gorm.Raw(`SELECT operation, outcome FROM processor_calls ORDER BY at`).Scan(&calls)
			raw, _ := json.Marshal(calls)
			t.Logf("processor calls recorded: %s", raw)
		})
	}
}

// createMutation creates a card payment of the chaos client (whose
// payments checkAgainstLedger reads) under $key.
const createMutation = `mutation($key: String!, $capture: Boolean) {
	createPayment(input: {clientId: "chaos", amount: "20.00", currency: "USD", method: CREDIT_CARD, capture: $capture,
		paymentMethodToken: "pm_card_visa"}, idempotencyKey: $key) { payment { id status } } }`
