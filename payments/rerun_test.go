package payments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// errAnswerLost is what a statement that loseAnswers wraps returns after
// its commit.
var errAnswerLost = errors.New("the statement's answer was lost after its commit")

// loseAnswers makes b's statements of more than one request commit, then
// fail with an error that is not the database's being unavailable: as one
// whose answer was lost, which the batcher runs again request by request.
// The first run answers copies of the jobs (unheard), which nobody reads.
// A statement of one runs as it is. The first statement waits for hold to
// close, after signalling on started, so that a test can queue requests
// behind it into one statement. restore puts b back as it was.
func loseAnswers[J batchJob](b *batcher[J], unheard func(J) J, started chan<- struct{}, hold <-chan struct{}) (restore func()) {
	exec, stallAfter := b.exec, b.stallAfter
	b.stallAfter = time.Hour // no second statement beside the held one
	var first sync.Once
	b.exec = func(ctx context.Context, jobs []J) error {
		first.Do(func() {
			started <- struct{}{}
			<-hold
		})
		if len(jobs) == 1 {
			return exec(ctx, jobs)
		}
		copies := make([]J, len(jobs))
		for i, j := range jobs {
			copies[i] = unheard(j)
		}
		if err := exec(ctx, copies); err != nil {
			return err
		}
		return errAnswerLost
	}
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.exec, b.stallAfter = exec, stallAfter
	}
}

// queueHolds waits until b's queue holds n requests.
func queueHolds[J batchJob](t *testing.T, b *batcher[J], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		queued := len(b.queue)
		b.mu.Unlock()
		if queued == n {
			return
		}
	}
	t.Fatalf("the queue never held %d requests", n)
}

// sent is what one request of TestALostAnswerIsNoReplay got, and what it
// and its payment should show afterwards.
type sent struct {
	name     string
	payment  string
	refund   *Refund
	replayed bool
	err      error
	history  []Outcome // the payment's attempts, oldest first
	counted  int       // its replays and rejections
	wantErr  error     // the error the request should get (errors.Is)
	refundID string    // the refund a replayed refund should answer with
}

// lostStatement queues sends behind a held statement of blocker's, in b,
// whose answers loseAnswers loses, and returns what each send got.
func lostStatement[J batchJob](t *testing.T, b *batcher[J], unheard func(J) J, blocker func() error, sends []func() sent) []sent {
	t.Helper()
	started, hold := make(chan struct{}, 1), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // also when a check below ends the test
	// Put b back once its requests are answered: a later statement of b, in
	// a later part of the test, must not lose its answer too.
	defer loseAnswers(b, unheard, started, hold)()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := blocker(); err != nil {
			t.Errorf("the held statement's request: %v", err)
		}
	})
	<-started
	out := make([]sent, len(sends))
	for i, send := range sends {
		wg.Go(func() { out[i] = send() })
	}
	queueHolds(t, b, len(sends))
	release()
	wg.Wait()
	return out
}

// TestALostAnswerIsNoReplay drives the batchers themselves: statements of
// several requests commit and their answers are lost, so each request is
// run again alone. Each was sent once and is answered as such, through
// the public API: created or applied (not replayed), a replay replayed, a
// refusal refused; and each is recorded and counted once.
func TestALostAnswerIsNoReplay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, err := NewService(db.Gorm, Config{ProcessorTimeout: time.Second, RecoveryAfter: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		origin := Origin{Transport: "test"}
		createReq := func(key string, capture bool) CreateRequest {
			return CreateRequest{ClientID: "c", IdempotencyKey: key, Amount: "10", Currency: "BRL",
				Method: MethodCreditCard, Capture: &capture, Origin: origin}
		}
		// Payments made before any answer is lost, authorized or captured,
		// one for each request below.
		var made [8]Payment
		for i, capture := range []bool{false, true, false, false, true, false, false, true} {
			res, err := s.Create(ctx, createReq("before-"+string(rune('a'+i)), capture))
			if err != nil {
				t.Fatal(err)
			}
			made[i] = res.Payment
		}
		captureReq := func(p Payment, key string) CaptureRequest {
			return CaptureRequest{PaymentID: p.ID, IdempotencyKey: key, Origin: origin}
		}
		if _, err := s.Capture(ctx, captureReq(made[3], "captured")); err != nil {
			t.Fatal(err)
		}
		one := "1"
		refundReq := func(p Payment, key string) RefundRequest {
			return RefundRequest{PaymentID: p.ID, IdempotencyKey: key, Amount: &one, Origin: origin}
		}
		refunded, err := s.Refund(ctx, refundReq(made[7], "refunded"))
		if err != nil {
			t.Fatal(err)
		}
		create := func(name string, req CreateRequest, history []Outcome, counted int) func() sent {
			return func() sent {
				r, err := s.Create(ctx, req)
				return sent{name: name, payment: r.Payment.ID, replayed: r.Replayed, err: err, history: history, counted: counted}
			}
		}
		change := func(name string, do func() (ChangeResult, error), history []Outcome, counted int) func() sent {
			return func() sent {
				r, err := do()
				return sent{name: name, payment: r.Payment.ID, refund: r.Refund, replayed: r.Replayed, err: err,
					history: history, counted: counted}
			}
		}
		// refused is a request that fails with want, on payment p.
		refused := func(name string, p Payment, do func() error, want error, history []Outcome, counted int) func() sent {
			return func() sent {
				return sent{name: name, payment: p.ID, err: do(), history: history, counted: counted, wantErr: want}
			}
		}
		check := func(all []sent) {
			for _, r := range all {
				checkSent(t, s, r)
			}
		}
		created, applied := []Outcome{OutcomeCreated}, []Outcome{OutcomeCreated, OutcomeApplied}
		check(lostStatement(t, &s.creates, unheardJob,
			func() error { _, err := s.Create(ctx, createReq("blocker-create", true)); return err },
			[]func() sent{
				create("create a", createReq("a", true), created, 0),
				create("create b", createReq("b", false), created, 0),
				create("replay", createReq("before-f", false), []Outcome{OutcomeCreated, OutcomeReplayed}, 1),
				refused("rejection", made[6], func() error {
					r := createReq("before-g", false)
					r.Amount = "11"
					_, err := s.Create(ctx, r)
					return err
				}, ErrKeyReused, []Outcome{OutcomeCreated, OutcomeRejected}, 1),
			}))
		check(lostStatement(t, &s.changes, unheardJob,
			func() error {
				_, err := s.Cancel(ctx, CancelRequest{PaymentID: made[2].ID, IdempotencyKey: "blocker-cancel", Origin: origin})
				return err
			},
			[]func() sent{
				change("capture", func() (ChangeResult, error) { return s.Capture(ctx, captureReq(made[0], "capture")) }, applied, 0),
				change("refund", func() (ChangeResult, error) { return s.Refund(ctx, refundReq(made[1], "refund")) }, applied, 0),
				change("capture replay", func() (ChangeResult, error) { return s.Capture(ctx, captureReq(made[3], "captured")) },
					[]Outcome{OutcomeCreated, OutcomeApplied, OutcomeReplayed}, 1),
				func() sent {
					r := change("refund replay", func() (ChangeResult, error) { return s.Refund(ctx, refundReq(made[7], "refunded")) },
						[]Outcome{OutcomeCreated, OutcomeApplied, OutcomeReplayed}, 1)()
					r.refundID = refunded.Refund.ID
					return r
				},
			}))
		// Refusals (captures of captured payments) are recorded by the
		// engine's record statement on PostgreSQL; SQLite records them in
		// the change's own transaction.
		if db.Dialect != "postgres" {
			return
		}
		check(lostStatement(t, &s.records, unheardRecord,
			func() error {
				_, err := s.Capture(ctx, captureReq(made[4], "blocker-refused"))
				return ignoreRefusal(err)
			},
			[]func() sent{
				refused("refusal 1", made[1], func() error { _, err := s.Capture(ctx, captureReq(made[1], "refused-1")); return err },
					ErrStateConflict, []Outcome{OutcomeCreated, OutcomeApplied, OutcomeRefused}, 0),
				refused("refusal 2", made[3], func() error { _, err := s.Capture(ctx, captureReq(made[3], "refused-2")); return err },
					ErrStateConflict, []Outcome{OutcomeCreated, OutcomeApplied, OutcomeReplayed, OutcomeRefused}, 1),
			}))
	})
}

func unheardJob(j *job) *job { return &job{cmd: j.cmd, answer: make(chan answer, 1)} }

func unheardRecord(j *recordJob) *recordJob {
	return &recordJob{rec: j.rec, answer: make(chan answer, 1)}
}

// ignoreRefusal is err unless it is the refusal a capture of a captured
// payment gets.
func ignoreRefusal(err error) error {
	if errors.Is(err, ErrStateConflict) {
		return nil
	}
	return err
}

// checkSent fails t unless r got the answer its request should have, and
// it and its payment show the attempts and counts they should.
func checkSent(t *testing.T, s *Service, r sent) {
	t.Helper()
	wantReplayed := r.history[len(r.history)-1] == OutcomeReplayed
	switch {
	case r.wantErr != nil && !errors.Is(r.err, r.wantErr):
		t.Errorf("%s: error %v; want %v", r.name, r.err, r.wantErr)
		return
	case r.wantErr == nil && (r.err != nil || r.replayed != wantReplayed):
		t.Errorf("%s: replayed %v, error %v; want replayed %v", r.name, r.replayed, r.err, wantReplayed)
		return
	case r.refundID != "" && (r.refund == nil || r.refund.ID != r.refundID):
		t.Errorf("%s: answered refund %+v; want %s", r.name, r.refund, r.refundID)
	}
	stored, err := s.Get(t.Context(), r.payment)
	if err != nil {
		t.Fatal(err)
	}
	attempts, err := s.Attempts(t.Context(), stored)
	if err != nil {
		t.Fatal(err)
	}
	var history []Outcome
	for _, a := range attempts {
		history = append(history, a.Outcome)
	}
	if counted := stored.ReplayCount + stored.RejectedCount; counted != r.counted || !slices.Equal(history, r.history) {
		t.Errorf("%s: %d replays and rejections counted, attempts %v; want %d, %v", r.name, counted, history, r.counted, r.history)
	}
	if r.name == "refund" && (r.refund == nil || stored.Refunded.Minor != 100) {
		t.Errorf("refund: answered %+v, %d refunded; want the one refund of 1.00", r.refund, stored.Refunded.Minor)
	}
}

// A change a lost statement applied, whose payment another instance then
// put in flight at its processor (a refund reserved, as a server
// configured for Stripe leaves it), is sent again the phased way and meets
// its own key there: it is answered applied, and its attempt and the
// processor call the statement stored are each counted once, on that
// answer, since the lost one was never heard.
func TestALostAnswerFoundThePhasedWay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		var mu sync.Mutex
		calls, applied := map[Operation]int{}, map[Operation]int{}
		s, err := NewService(db.Gorm, Config{ProcessorTimeout: time.Second, RecoveryAfter: time.Hour,
			OnProcessorCall: func(op Operation, _ CallOutcome, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				calls[op]++
			},
			OnAttempt: func(op Operation, outcome Outcome, _ string) {
				mu.Lock()
				defer mu.Unlock()
				if outcome == OutcomeApplied {
					applied[op]++
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, origin, no := t.Context(), Origin{Transport: "test"}, false
		var made [3]Payment
		for i := range made {
			res, err := s.Create(ctx, CreateRequest{ClientID: "c", IdempotencyKey: fmt.Sprint("made-", i), Amount: "10",
				Currency: "BRL", Method: MethodCreditCard, Capture: &no, Origin: origin})
			if err != nil {
				t.Fatal(err)
			}
			made[i] = res.Payment
		}
		// After the lost statement commits, and before its requests are
		// sent again, made[0] gets a refund in flight.
		exec := s.changes.exec
		s.changes.exec = func(ctx context.Context, jobs []*job) error {
			if err := exec(ctx, jobs); err != nil || len(jobs) == 1 {
				return err
			}
			return db.Gorm.Exec("UPDATE payments SET reserved_minor = 100 WHERE id = ?", made[0].ID).Error
		}
		capture := func(name string, p Payment) func() sent {
			return func() sent {
				r, err := s.Capture(ctx, CaptureRequest{PaymentID: p.ID, IdempotencyKey: name, Origin: origin})
				return sent{name: name, payment: r.Payment.ID, replayed: r.Replayed, err: err,
					history: []Outcome{OutcomeCreated, OutcomeApplied}}
			}
		}
		got := lostStatement(t, &s.changes, unheardJob,
			func() error {
				_, err := s.Cancel(ctx, CancelRequest{PaymentID: made[2].ID, IdempotencyKey: "blocker", Origin: origin})
				return err
			},
			[]func() sent{capture("capture, then in flight", made[0]), capture("capture", made[1])})
		for _, r := range got {
			checkSent(t, s, r)
		}
		mu.Lock()
		defer mu.Unlock()
		if calls[OpCapture] != 2 || applied[OpCapture] != 2 {
			t.Errorf("captures: %d calls and %d applied attempts counted; want 2 and 2, one of each per capture",
				calls[OpCapture], applied[OpCapture])
		}
	})
}
