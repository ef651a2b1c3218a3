package payments

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cmpay/cmpay/models"
)

// ChangeStatementAnswers runs reqs as one change statement, as the batcher
// sends requests that arrive together, and says what the store answered
// each: "settled OUTCOME", "not applied", "retry", "not found",
// "forbidden", or for a held key "held, then " and what the engine made of
// it. For tests of what one statement decides, which the batcher otherwise
// groups by timing. Requests the batcher would never put in one statement
// (sharing a key or a payment) are refused.
func ChangeStatementAnswers(ctx context.Context, s *Service, reqs ...RefundRequest) ([]string, error) {
	jobs := make([]*job, len(reqs))
	seen := map[string]bool{}
	for i, r := range reqs {
		cmd, err := r.command()
		if err != nil {
			return nil, err
		}
		jobs[i] = &job{cmd: cmd, answer: make(chan answer, 1)}
		for _, k := range jobs[i].batchKeys() {
			if seen[k] {
				return nil, fmt.Errorf("two requests share %q: the batcher never sends them together", k)
			}
			seen[k] = true
		}
	}
	statement := slices.Clone(jobs)
	slices.SortFunc(statement, byPayment)
	if err := s.store.changeBatch(ctx, statement); err != nil {
		return nil, err
	}
	out := make([]string, len(jobs))
	for i, j := range jobs {
		a := <-j.answer
		switch a.kind {
		case answerSettled:
			out[i] = fmt.Sprintf("settled %s", a.outcome)
		case answerHeld:
			settled, err := s.judge(ctx, j.cmd, a)
			if err == nil && settled.kind == answerSettled {
				_, err = s.finish(j.cmd, settled)
				out[i] = fmt.Sprintf("held, then settled %s", settled.outcome)
			} else {
				out[i] = fmt.Sprintf("held, then kind %d", settled.kind)
			}
			if err != nil {
				out[i] += fmt.Sprintf(" (%v)", err)
			}
		case answerNotApplied:
			out[i] = "not applied"
		case answerRetry:
			out[i] = "retry"
		case answerNotFound:
			out[i] = "not found"
		case answerForbidden:
			out[i] = "forbidden"
		default:
			out[i] = fmt.Sprintf("kind %d, error %v", a.kind, a.err)
		}
	}
	return out, nil
}

// Seam is a Service's store, for the store suite (store_test.go), which
// runs in package payments_test: dbtest imports package database, which
// imports this one. Its methods are the store's, in exported terms.
type Seam struct{ s *Service }

// SeamOf is s's store.
func SeamOf(s *Service) Seam { return Seam{s} }

// Request is a request of any operation: a CreateRequest, CaptureRequest,
// CancelRequest or RefundRequest.
type Request interface{ command() (*command, error) }

// Answer is what a store, or the engine after it, answered one request.
type Answer struct {
	// Kind is "settled", "held", "not applied", "retry", "not found" or
	// "forbidden".
	Kind    string
	Outcome Outcome
	Payment Payment
	Refund  *Refund
	Refused error
	// Differing names a rejection's differing fields.
	Differing []string
}

func answerOf(cmd *command, a answer) Answer {
	kinds := map[answerKind]string{answerSettled: "settled", answerHeld: "held", answerNotApplied: "not applied",
		answerRetry: "retry", answerNotFound: "not found", answerForbidden: "forbidden"}
	out := Answer{Kind: kinds[a.kind], Outcome: a.outcome, Payment: a.payment, Refund: a.refund, Refused: a.refused}
	if a.outcome == OutcomeRejected && a.held != nil {
		out.Differing = rejection(*a.held, cmd).DifferingFields
	}
	return out
}

func commands(reqs []Request) ([]*command, error) {
	cmds := make([]*command, len(reqs))
	for i, r := range reqs {
		c, err := r.command()
		if err != nil {
			return nil, err
		}
		cmds[i] = c
	}
	return cmds, nil
}

// statement is the store's batch statement for requests of op.
func (m Seam) statement(op Operation) func(context.Context, []*job) error {
	if op == OpCreate {
		return m.s.store.createBatch
	}
	return m.s.store.changeBatch
}

// Batch sends reqs to the store as one statement, as the batcher would
// (sorted; the caller keeps them to one per key and payment, all creates
// or all changes), and returns its answers as it gave them, in reqs' order.
func (m Seam) Batch(ctx context.Context, reqs ...Request) ([]Answer, error) {
	cmds, err := commands(reqs)
	if err != nil {
		return nil, err
	}
	jobs := make([]*job, len(cmds))
	for i, c := range cmds {
		jobs[i] = &job{cmd: c, answer: make(chan answer, 1)}
	}
	run := m.statement(cmds[0].op)
	if err := run(ctx, slices.SortedFunc(slices.Values(jobs), byPayment)); err != nil {
		return nil, err
	}
	out := make([]Answer, len(jobs))
	for i, j := range jobs {
		a := <-j.answer
		if a.err != nil {
			return nil, a.err
		}
		out[i] = answerOf(j.cmd, a)
	}
	return out, nil
}

// Send takes req through the store alone, past the batcher, so that
// concurrent sends race in the database, and finishes each answer as the
// engine does (judge), sending it again while that says retry.
func (m Seam) Send(ctx context.Context, req Request) (Answer, error) {
	cmd, err := req.command()
	if err != nil {
		return Answer{}, err
	}
	run := m.statement(cmd.op)
	for range maxRounds {
		j := &job{cmd: cmd, answer: make(chan answer, 1)}
		if err := run(ctx, []*job{j}); err != nil {
			return Answer{}, err
		}
		a := <-j.answer
		if a.err != nil {
			return Answer{}, a.err
		}
		if a, err = m.s.judge(ctx, cmd, a); err != nil {
			return Answer{}, err
		}
		if a.kind != answerRetry {
			return answerOf(cmd, a), nil
		}
	}
	return Answer{}, errRoundsExhausted
}

// RunAgain sends req's statement twice with one and the same request, as
// the batcher does when a statement's answer was lost after its commit.
// It returns what the first run answered (which the batcher never hears),
// what the second run's statement answered, and the engine's answer
// (judge) to that.
func (m Seam) RunAgain(ctx context.Context, req Request) (first, statement, engine Answer, err error) {
	cmd, err := req.command()
	if err != nil {
		return Answer{}, Answer{}, Answer{}, err
	}
	run := m.statement(cmd.op)
	var answers [2]Answer
	var a answer
	for i := range answers {
		j := &job{cmd: cmd, answer: make(chan answer, 1)}
		if i > 0 {
			j.sendAgain()
		}
		if err := run(ctx, []*job{j}); err != nil {
			return Answer{}, Answer{}, Answer{}, err
		}
		if a = <-j.answer; a.err != nil {
			return Answer{}, Answer{}, Answer{}, a.err
		}
		answers[i] = answerOf(cmd, a)
	}
	if a, err = m.s.judge(ctx, cmd, a); err != nil {
		return Answer{}, Answer{}, Answer{}, err
	}
	return answers[0], answers[1], answerOf(cmd, a), nil
}

// ReadPayment is the store's readPayment.
func (m Seam) ReadPayment(ctx context.Context, id string) (Payment, bool, error) {
	return m.s.store.readPayment(ctx, id)
}

// Key is a held key as the suite sees it.
type Key struct {
	ID        int64
	CreatedAt time.Time
	Version   int
}

// ReadKey reads the key client holds, on the primary.
func (m Seam) ReadKey(ctx context.Context, client, key string) (Key, error) {
	h, err := m.heldKey(ctx, client, key)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: h.id, CreatedAt: h.createdAt, Version: h.version}, nil
}

func (m Seam) heldKey(ctx context.Context, client, key string) (*heldKey, error) {
	r, err := m.s.store.runnerOn(m.s.reads.Reader())
	if err != nil {
		return nil, err
	}
	return scanHeld(r.QueryRow(ctx, commonSQL.SQL("read_key"), client, key))
}

// SettleHeld is the engine's answer to req when a statement leaves its
// key, which client holds, to the engine: decide's verdict, recorded by
// settleHeld.
func (m Seam) SettleHeld(ctx context.Context, req Request, client string) (Answer, error) {
	cmd, err := req.command()
	if err != nil {
		return Answer{}, err
	}
	held, err := m.heldKey(ctx, client, cmd.key)
	if err != nil {
		return Answer{}, err
	}
	a, err := settleHeld(ctx, m.s, cmd, held, m.s.now(), m.s.keyTTL)
	if err != nil {
		return Answer{}, err
	}
	return answerOf(cmd, a), nil
}

// ForgetKey is the store's forgetKey.
func (m Seam) ForgetKey(ctx context.Context, id int64, expiredBefore time.Time) error {
	return m.s.store.forgetKey(ctx, id, expiredBefore)
}

// Rec is an attempt for the store to record (RecordBatch): req's, with
// the given outcome, on paymentID, at Now; for a replay, of a key that
// made refund HeldRefundID (or none); for a rejection, of a key first
// used with HeldParams; for a refusal, Refused.
type Rec struct {
	Req          Request
	Outcome      Outcome
	PaymentID    string
	HeldRefundID string
	HeldParams   Params
	Refused      error
	Now          time.Time
}

// RecordBatch is the store's recordBatch of recs, as one statement, with
// each one's answer, or the error it alone failed with, in recs' order.
func (m Seam) RecordBatch(ctx context.Context, recs ...Rec) ([]Answer, []error, error) {
	jobs := make([]*recordJob, len(recs))
	for i, r := range recs {
		cmd, err := r.Req.command()
		if err != nil {
			return nil, nil, err
		}
		rec := record{cmd: cmd, outcome: r.Outcome, paymentID: r.PaymentID, refused: r.Refused, now: r.Now}
		if r.Outcome != OutcomeRefused {
			rec.held = &heldKey{paymentID: r.PaymentID, refundID: r.HeldRefundID, params: r.HeldParams, createdAt: r.Now.Add(-time.Second)}
		}
		jobs[i] = &recordJob{rec: rec, answer: make(chan answer, 1)}
	}
	if err := m.s.store.recordBatch(ctx, slices.SortedFunc(slices.Values(jobs), byRecordPayment)); err != nil {
		return nil, nil, err
	}
	answers, errs := make([]Answer, len(jobs)), make([]error, len(jobs))
	for i, j := range jobs {
		a := <-j.answer
		answers[i], errs[i] = answerOf(j.rec.cmd, a), a.err
	}
	return answers, errs, nil
}

// ErrPaymentMissing is what recording on a missing payment fails with.
var ErrPaymentMissing = errPaymentMissing

// List reads a page of f, of at most size payments after the payment
// after (if not nil), on a Runner over Config.Reads' database.
func (m Seam) List(ctx context.Context, f Filter, after *Payment, size int) ([]Payment, error) {
	l, err := listingOf(f)
	if err != nil {
		return nil, err
	}
	var resume *position
	if after != nil {
		resume = &position{at: after.CreatedAt, id: after.ID}
	}
	return m.s.readPage(ctx, m.s.reads.Reader(), l.page(resume, size))
}

// AttemptsOf and RefundsOf are the store's.
func (m Seam) AttemptsOf(ctx context.Context, ids ...string) ([]models.IdempotencyAttempt, error) {
	return m.s.store.attemptsOf(ctx, ids)
}

func (m Seam) RefundsOf(ctx context.Context, ids ...string) ([]models.Refund, error) {
	return m.s.store.refundsOf(ctx, ids)
}

// HourCount is a row of AttemptCounts.
type HourCount = hourCount

// AttemptCounts is the store's attemptCounts on Config.Reads' database.
func (m Seam) AttemptCounts(ctx context.Context, from time.Time) ([]HourCount, error) {
	r, err := m.s.store.runnerOn(m.s.reads.Reader())
	if err != nil {
		return nil, err
	}
	return m.s.store.attemptCounts(ctx, r, from)
}

// SweepKeys is the store's sweepKeys.
func (m Seam) SweepKeys(ctx context.Context, before time.Time, limit int) (int64, error) {
	return m.s.store.sweepKeys(ctx, before, limit)
}

// Verdict is what decide makes of req with the key client holds, now:
// "replay", "reject" or "forget".
func (m Seam) Verdict(ctx context.Context, req Request, client string) (string, error) {
	cmd, err := req.command()
	if err != nil {
		return "", err
	}
	held, err := m.heldKey(ctx, client, cmd.key)
	if err != nil {
		return "", err
	}
	v, err := decide(*held, cmd, m.s.now().Add(-m.s.keyTTL))
	if err != nil {
		return "", err
	}
	return map[verdict]string{verdictReplay: "replay", verdictReject: "reject", verdictForget: "forget"}[v], nil
}
