package payments

import (
	"context"
	"errors"
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
// A statement of one runs as it is. The first statement waits for hold to
// close, after signalling on started, so that a test can queue requests
// behind it into one statement.
func loseAnswers(b *batcher[*job], started chan<- struct{}, hold <-chan struct{}) {
	exec := b.exec
	b.stallAfter = time.Hour // no second statement beside the held one
	var first sync.Once
	b.exec = func(ctx context.Context, jobs []*job) error {
		first.Do(func() {
			started <- struct{}{}
			<-hold
		})
		if len(jobs) == 1 {
			return exec(ctx, jobs)
		}
		unheard := make([]*job, len(jobs)) // the same requests, whose answers nobody reads
		for i, j := range jobs {
			unheard[i] = &job{cmd: j.cmd, answer: make(chan answer, 1)}
		}
		if err := exec(ctx, unheard); err != nil {
			return err
		}
		return errAnswerLost
	}
}

// queueHolds waits until b's queue holds n requests.
func queueHolds(t *testing.T, b *batcher[*job], n int) {
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

// TestALostAnswerIsNoReplay drives the batcher itself: a statement of
// several requests commits and its answer is lost, so each request is run
// again alone and meets its own key. Each was sent once and is answered
// as such, through the public API: created or applied, not replayed, and
// recorded and counted once.
func TestALostAnswerIsNoReplay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, err := NewService(db.Gorm, Config{ProcessorTimeout: time.Second, RecoveryAfter: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		origin := Origin{Transport: "test"}
		create := func(key string, capture bool) (CreateResult, error) {
			return s.Create(ctx, CreateRequest{ClientID: "c", IdempotencyKey: key, Amount: "10", Currency: "BRL",
				Method: MethodCreditCard, Capture: &capture, Origin: origin})
		}
		// Payments to change, made before any answer is lost.
		var changed [3]Payment
		for i, capture := range []bool{false, true, false} {
			res, err := create("before-"+string(rune('a'+i)), capture)
			if err != nil {
				t.Fatal(err)
			}
			changed[i] = res.Payment
		}
		one := "1"
		sends := map[string]func() (Payment, *Refund, bool, error){
			"create a": func() (Payment, *Refund, bool, error) {
				r, err := create("a", true)
				return r.Payment, nil, r.Replayed, err
			},
			"create b": func() (Payment, *Refund, bool, error) {
				r, err := create("b", false)
				return r.Payment, nil, r.Replayed, err
			},
			"capture": func() (Payment, *Refund, bool, error) {
				r, err := s.Capture(ctx, CaptureRequest{PaymentID: changed[0].ID, IdempotencyKey: "capture", Origin: origin})
				return r.Payment, r.Refund, r.Replayed, err
			},
			"refund": func() (Payment, *Refund, bool, error) {
				r, err := s.Refund(ctx, RefundRequest{PaymentID: changed[1].ID, IdempotencyKey: "refund", Amount: &one, Origin: origin})
				return r.Payment, r.Refund, r.Replayed, err
			},
		}
		// One statement of creates and one of changes, each queued behind
		// a held statement of one request (a create, a cancel).
		blockers := []func() error{
			func() error { _, err := create("blocker", true); return err },
			func() error {
				_, err := s.Cancel(ctx, CancelRequest{PaymentID: changed[2].ID, IdempotencyKey: "blocker-cancel", Origin: origin})
				return err
			},
		}
		type result struct {
			name     string
			payment  Payment
			refund   *Refund
			replayed bool
			err      error
		}
		results := make(chan result, len(sends))
		var wg sync.WaitGroup
		for i, b := range []*batcher[*job]{&s.creates, &s.changes} {
			started, hold := make(chan struct{}, 1), make(chan struct{})
			loseAnswers(b, started, hold)
			wg.Go(func() {
				if err := blockers[i](); err != nil {
					t.Errorf("the held statement's request: %v", err)
				}
			})
			<-started
			for name, send := range sends {
				if (b == &s.creates) == (name[:6] == "create") {
					wg.Go(func() {
						p, r, replayed, err := send()
						results <- result{name, p, r, replayed, err}
					})
				}
			}
			queueHolds(t, b, 2)
			close(hold)
		}
		wg.Wait()
		close(results)
		for r := range results {
			if r.err != nil || r.replayed {
				t.Errorf("%s: replayed %v, error %v; want applied once, not replayed", r.name, r.replayed, r.err)
				continue
			}
			stored, err := s.Get(ctx, r.payment.ID)
			if err != nil {
				t.Fatal(err)
			}
			attempts, err := s.Attempts(ctx, stored)
			if err != nil {
				t.Fatal(err)
			}
			var outcomes []Outcome
			for _, a := range attempts {
				outcomes = append(outcomes, a.Outcome)
			}
			want := []Outcome{OutcomeCreated}
			if r.name[:6] != "create" {
				want = append(want, OutcomeApplied)
			}
			if stored.ReplayCount != 0 || !slices.Equal(outcomes, want) {
				t.Errorf("%s: %d replays counted, attempts %v; want none, %v", r.name, stored.ReplayCount, outcomes, want)
			}
			if r.name == "refund" && (r.refund == nil || stored.Refunded.Minor != 100) {
				t.Errorf("refund: answered %+v, %d refunded; want the one refund of 1.00", r.refund, stored.Refunded.Minor)
			}
		}
	})
}
