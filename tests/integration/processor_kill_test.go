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
			k := startKillTest(t, dialect)
			authorized := k.create(t, k.first, "killed-authorized", false).ID
			captured := k.create(t, k.first, "killed-captured", true).ID
			if t.Failed() {
				return
			}
			k.killWhileTheProcessorHolds(t, authorized, captured)
			second := k.starting.ready(t)

			waitUntil(t, "every processor operation resolved", 30*time.Second, 50*time.Millisecond, func() bool {
				return countOpen(t, k.db) == 0
			})
			checkAgainstLedger(t, k.db, k.double, 3)
			k.retriesReplay(t, second, authorized, captured)
			var calls []struct{ Operation, Outcome string }
			k.db.Gorm.Raw(`SELECT operation, outcome FROM processor_calls ORDER BY at`).Scan(&calls)
			raw, _ := json.Marshal(calls)
			t.Logf("processor calls recorded: %s", raw)
		})
	}
}

// killTest is one dialect's run of TestKilledBetweenTheProcessorAndTheCommit:
// the Stripe double, the database, the first process, and the second,
// started but not yet waited for.
type killTest struct {
	double   *stripedouble.Double
	db       dbtest.DB
	first    *process
	starting *launched
}

// The capture and the refund the first process is killed in.
const (
	killCaptureOp = `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, idempotencyKey: $key) { payment { status } } }`
	killRefundOp  = `mutation($id: ID!, $key: String!) { refundPayment(paymentId: $id, amount: "5.00", idempotencyKey: $key) { refund { id status } } }`
)

// startKillTest starts the double and the first process on an empty
// database of dialect, then the second on the same database.
func startKillTest(t *testing.T, dialect string) *killTest {
	t.Helper()
	k := &killTest{double: stripedouble.New(stripedouble.Options{})}
	t.Cleanup(k.double.Close)
	// The dead process's leases hold for PROCESSOR_TIMEOUT and 5 s
	// more (payments' leaseMargin), most of the test's time; the
	// timeout is the part a test may shorten. It must still outlast
	// the wait for the three calls to reach the double
	// (milliseconds on loopback), so that the kill, not the
	// timeout, ends them: killWhileTheProcessorHolds checks that none
	// was recorded.
	env := []string{"PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_killed", "STRIPE_API_BASE=" + k.double.URL(),
		"PROCESSOR_TIMEOUT=1s", "PROCESSOR_RECOVERY_AFTER=500ms", "STRIPE_SEARCH_LAG=100ms"}
	// The second starts once the first listens, and is waited for
	// only once the first is dead: its start (its migration, which
	// would wait for the first's) overlaps the leases' time.
	k.first, k.db = startOnEmpty(t, dialect, env...)
	k.starting = launch(t, k.db.URL, env...)
	return k
}

// killedPayment is a payment as createPayment answers.
type killedPayment struct{ ID, Status string }

// create creates a payment on p under key, retried until its answer is
// final.
func (k *killTest) create(t *testing.T, p *process, key string, capture bool) killedPayment {
	t.Helper()
	var c struct {
		CreatePayment struct{ Payment killedPayment }
	}
	retryFinal(t, func(int) string { return p.url }, createMutation, map[string]any{"key": key, "capture": capture}, &c,
		&retriedAnswers{})
	return c.CreatePayment.Payment
}

// killWhileTheProcessorHolds sends a create, a capture of authorized and
// a refund of captured to the first process, holds the double's answers,
// and SIGKILLs the process once all three calls reached the double; it
// checks that none was recorded, so that recovery alone learns what
// they did.
func (k *killTest) killWhileTheProcessorHolds(t *testing.T, authorized, captured string) {
	t.Helper()
	hold := make(chan struct{})
	held := stripedouble.Fault{Kind: stripedouble.Delay, Hold: hold}
	k.double.FailNext(stripedouble.CreatePaymentIntent, held)
	k.double.FailNext(stripedouble.CapturePaymentIntent, held)
	k.double.FailNext(stripedouble.CreateRefund, held)
	creates := k.double.Calls(stripedouble.CreatePaymentIntent)
	url := k.first.url
	var wg sync.WaitGroup
	for _, send := range []func(){
		func() { _, _ = gql(url, createMutation, map[string]any{"key": "killed-new", "capture": true}) },
		func() { _, _ = gql(url, killCaptureOp, map[string]any{"id": authorized, "key": "killed-capture"}) },
		func() { _, _ = gql(url, killRefundOp, map[string]any{"id": captured, "key": "killed-refund"}) },
	} {
		wg.Go(send)
	}
	sent := time.Now()
	waitUntil(t, "the three calls at the processor", 10*time.Second, 5*time.Millisecond, func() bool {
		return k.double.Calls(stripedouble.CreatePaymentIntent) == creates+1 &&
			k.double.Calls(stripedouble.CapturePaymentIntent) == 1 && k.double.Calls(stripedouble.CreateRefund) == 1
	})
	if err := k.first.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	killedAfter := time.Since(sent)
	k.first.exited <- <-k.first.exited
	wg.Wait() // each got no answer: its server is gone
	close(hold)
	// Each call was ended by the kill, not by its timeout: none
	// was recorded, so recovery alone learns what they did.
	var unrecorded int
	if err := k.db.Gorm.Raw(`SELECT COUNT(*) FROM processor_operations o WHERE o.state = 'PENDING'
		AND NOT EXISTS (SELECT 1 FROM processor_calls c WHERE c.operation_id = o.id)`).Scan(&unrecorded).Error; err != nil {
		t.Fatal(err)
	}
	if unrecorded != 3 {
		t.Fatalf("%d of the three operations recorded by the first process, killed %s after they were sent: "+
			"their calls ended by PROCESSOR_TIMEOUT, not by the kill", 3-unrecorded, killedAfter)
	}
}

// retriesReplay sends the clients' retries, with their keys, to the
// process left, and checks that each gets what recovery settled.
func (k *killTest) retriesReplay(t *testing.T, second *process, authorized, captured string) {
	t.Helper()
	to := func(int) string { return second.url }
	again := k.create(t, second, "killed-new", true)
	var capture struct {
		CapturePayment struct{ Payment struct{ Status string } }
	}
	retryFinal(t, to, killCaptureOp, map[string]any{"id": authorized, "key": "killed-capture"}, &capture, &retriedAnswers{})
	var refund struct {
		RefundPayment struct{ Refund struct{ ID, Status string } }
	}
	retryFinal(t, to, killRefundOp, map[string]any{"id": captured, "key": "killed-refund"}, &refund, &retriedAnswers{})
	if again.Status != "CAPTURED" || capture.CapturePayment.Payment.Status != "CAPTURED" ||
		refund.RefundPayment.Refund.Status != "SUCCEEDED" {
		t.Errorf("retried after recovery: create %+v, capture %+v, refund %+v; want CAPTURED, CAPTURED, SUCCEEDED",
			again, capture, refund)
	}
}

// createMutation creates a card payment of the chaos client (whose
// payments checkAgainstLedger reads) under $key.
const createMutation = `mutation($key: String!, $capture: Boolean) {
	createPayment(input: {clientId: "chaos", amount: "20.00", currency: "USD", method: CREDIT_CARD, capture: $capture,
		paymentMethodToken: "pm_card_visa"}, idempotencyKey: $key) { payment { id status } } }`
