package payments

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/cmpay/cmpay/processor"
)

// The engine: one path that every operation goes through. An operation is
// validated and fingerprinted into a command (request.go), sent to the
// store, which claims its key (in a batch: batch.go, group commit), and a
// held key is judged by decide (decide.go) and recorded (settleHeld).

// CreateResult is the answer to a create that was not refused.
type CreateResult struct {
	Payment Payment
	// Replayed is true when the key had been used with the same payload and
	// the payment it created is returned.
	Replayed bool
}

// ChangeResult is the answer to a capture, cancel or refund that was not
// refused: the payment as it is now, and for a refund the refund.
type ChangeResult struct {
	Payment Payment
	// Refund is the refund a refund request created (on a replay, the one
	// the first request created); nil for a capture or cancel.
	Refund *Refund
	// Replayed is true when the key had been used for the same request and
	// its first result is returned; nothing was done again.
	Replayed bool
}

// Create creates the payment a request asks for, exactly once per client
// and idempotency key:
//
//   - a new key creates the payment (captured, or only authorized when
//     Capture is false);
//   - the same key with the same payload returns that payment, unchanged,
//     with Replayed set;
//   - the same key with another payload, or a key used for another
//     operation, fails with a *KeyReusedError;
//   - a key older than the TTL is forgotten and handled as new.
//
// The database's unique index on (client_id, idempotency_key) decides which
// of any number of simultaneous requests, on any number of instances,
// creates the payment; the others wait for it and return it. Every outcome
// is recorded as an attempt of the payment. Bad input fails with an
// *InvalidInputError and writes nothing.
//
// The payment is made at the processor (operations.go): it comes back in
// the status the processor left it (DECLINED with its code for a
// decline), or PROCESSING when the processor did not answer in time, to
// be resolved by recovery; a replay answers the payment as it is now.
func (s *Service) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	cmd, err := req.command()
	if err != nil {
		return CreateResult{}, err
	}
	if req.Client != "" && req.Client != req.ClientID {
		return CreateResult{}, fmt.Errorf("create a payment for client %q: %w", req.ClientID, ErrForbidden)
	}
	if cmd.token == "" && s.proc.Name() == processor.NameStripe && !cmd.method.async() {
		return CreateResult{}, invalid("paymentMethodToken", "paymentMethodToken is required for a card payment with this processor")
	}
	if !cmd.capture && cmd.method.async() && s.paysLater() {
		return CreateResult{}, invalid("capture", "capture: false is for cards: a %s payment is paid by its payer, and captured then", cmd.method)
	}
	if err := checkAmount(s.proc, cmd.amount); err != nil {
		return CreateResult{}, err
	}
	s.planCreate(ctx, cmd)
	a, err := s.run(ctx, cmd)
	if err != nil {
		return CreateResult{}, fmt.Errorf("create payment: %w", err)
	}
	switch {
	case a.outcome != OutcomeCreated: // a replay stores no call
	case cmd.plan.storesOperation():
		// Phases 2 and 3: the payment is stored PROCESSING; ask.
		if a.payment, err = s.askCreate(ctx, cmd); err != nil {
			return CreateResult{}, fmt.Errorf("create payment %s: %w", cmd.newID, err)
		}
	default:
		s.onCall(OpCreate, cmd.plan.call, cmd.plan.took) // the foreseen call, stored with the payment
	}
	return CreateResult{Payment: a.payment, Replayed: a.outcome == OutcomeReplayed}, nil
}

// checkAmount is an InvalidInputError if proc cannot take m
// (processor.AmountChecker): checked before anything is stored.
func checkAmount(proc processor.Processor, m Money) error {
	c, ok := proc.(processor.AmountChecker)
	if !ok {
		return nil
	}
	if err := c.CheckAmount(m.Minor, m.Currency); err != nil {
		return invalid("amount", "%s", err.Error())
	}
	return nil
}

// Capture captures an authorized payment, Cancel cancels one, and Refund
// refunds a captured one, each exactly once per idempotency key, with the
// same promise as Create: a retry gets the first result (Replayed, the
// same refund), a key reused for anything else fails with a
// *KeyReusedError, and concurrent requests, on any number of instances,
// never capture and cancel the same payment nor refund more than was
// captured. A payment whose status does not allow the operation fails with
// a *StateConflictError, an amount above what is available with an
// *AmountExceedsError; both leave the key unused and are recorded as
// attempts. A payment id that does not exist is ErrNotFound.
func (s *Service) Capture(ctx context.Context, req CaptureRequest) (ChangeResult, error) {
	return s.change(ctx, req.command)
}

// Cancel: see Capture.
func (s *Service) Cancel(ctx context.Context, req CancelRequest) (ChangeResult, error) {
	return s.change(ctx, req.command)
}

// Refund: see Capture.
func (s *Service) Refund(ctx context.Context, req RefundRequest) (ChangeResult, error) {
	return s.change(ctx, req.command)
}

func (s *Service) change(ctx context.Context, build func() (*command, error)) (ChangeResult, error) {
	cmd, err := build()
	if err != nil {
		return ChangeResult{}, err
	}
	res, err := s.changeBy(ctx, cmd)
	if err != nil {
		return ChangeResult{}, fmt.Errorf("%s %s: %w", verb(cmd.op), cmd.paymentID, err)
	}
	return res, nil
}

// changeBy takes a change through the batch statements where its answer
// is foreseen (the sandbox configured, and the payment one the batch may
// take: foreseen in changes.go), and the phased way otherwise.
func (s *Service) changeBy(ctx context.Context, cmd *command) (ChangeResult, error) {
	if s.foreseesChanges() {
		a, err := s.run(ctx, cmd)
		if err != nil {
			return ChangeResult{}, err
		}
		if a.kind != answerNotForeseen {
			if a.outcome == OutcomeApplied {
				s.onCall(cmd.op, CallSucceeded, 0) // the foreseen call of the change the statement stored
			}
			return ChangeResult{Payment: a.payment, Refund: a.refund, Replayed: a.outcome == OutcomeReplayed}, nil
		}
	}
	return s.changeAtProcessor(ctx, cmd)
}

// requestTimeout bounds a request's work, including one whose client went
// away.
const requestTimeout = 15 * time.Second

// maxRounds bounds how often a request is sent again after an answer that
// needs another look: a race lost to a request that committed while the
// statement ran, an expired key forgotten, a payment changed under a
// change's snapshot, a deadlock PostgreSQL broke by rolling this request's
// transaction back. One or two are the most a request needs in practice.
const maxRounds = 5

// errRoundsExhausted: the request could not be settled in maxRounds.
var errRoundsExhausted = errors.New("could not settle the request: the key or payment kept changing")

// run takes a command through the store until it is settled, and returns
// the settled answer or the error the client gets.
func (s *Service) run(ctx context.Context, cmd *command) (answer, error) {
	// Once started, the work commits or rolls back as a unit even if the
	// client goes away: its retry then finds the result or nothing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()

	if cmd.op != OpCreate && !plausibleID(cmd.paymentID) {
		return s.finish(cmd, answer{kind: answerNotFound})
	}
	for range maxRounds {
		a, err := s.submit(ctx, cmd)
		if err != nil {
			return answer{}, err
		}
		if a, err = s.judge(ctx, cmd, a); err != nil {
			return answer{}, err
		}
		if a.kind == answerRetry {
			continue
		}
		return s.finish(cmd, a)
	}
	return answer{}, errRoundsExhausted
}

// judge finishes what the store left open in its answer a to cmd: a held
// key is judged by decide and the verdict recorded (settleHeld); a change
// the statement did not apply is stopped or refused by the rule the
// payment, as the statement saw it, breaks, or, if none does (the payment
// changed after the statement's snapshot), sent again.
func (s *Service) judge(ctx context.Context, cmd *command, a answer) (answer, error) {
	switch a.kind {
	case answerHeld:
		return settleHeld(ctx, s, cmd, a.held, s.now(), s.keyTTL)
	case answerNotApplied:
		if !foreseen(a.payment) {
			return answer{kind: answerNotForeseen}, nil
		}
		amount, stop := stopped(cmd, a.payment)
		if stop != nil {
			return *stop, stop.err
		}
		refused := refusal(cmd, a.payment, amount)
		if refused == nil {
			return answer{kind: answerRetry}, nil
		}
		return s.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeRefused, paymentID: a.payment.ID, refused: refused, now: s.now()})
	}
	return a, nil
}

// The engine's settler (store.go): reads and forgets on the primary, and
// records through a batcher, so that the attempts it decides share
// statements as the claims before them did.

func (s *Service) readPayment(ctx context.Context, id string) (Payment, bool, error) {
	return s.store.readPayment(ctx, id)
}

func (s *Service) readRefund(ctx context.Context, id string, p Payment) (*Refund, error) {
	return readRefund(ctx, s.store.db(), id, p)
}

func (s *Service) forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error {
	return s.store.forgetKey(ctx, id, expiredBefore)
}

// recordAttempt sends rec to the record statement and waits for its
// answer.
func (s *Service) recordAttempt(ctx context.Context, rec record) (answer, error) {
	j := &recordJob{rec: rec, answer: make(chan answer, 1)}
	s.records.submit(j)
	return await(ctx, j.answer)
}

// submit sends cmd to the statement of its kind and waits for its answer.
func (s *Service) submit(ctx context.Context, cmd *command) (answer, error) {
	j := &job{cmd: cmd, answer: make(chan answer, 1)}
	if cmd.op == OpCreate {
		s.creates.submit(j)
	} else {
		s.changes.submit(j)
	}
	return await(ctx, j.answer)
}

// await waits for a statement's answer, or for ctx to end. The statement
// may still run then; the client's retry will find what it did, as after
// any lost answer.
func await(ctx context.Context, answers <-chan answer) (answer, error) {
	select {
	case a := <-answers:
		return a, a.err
	case <-ctx.Done():
		return answer{}, fmt.Errorf("waiting for the statement: %w", ctx.Err())
	}
}

// settleHeld judges a request whose key is held (decide) and records the
// verdict with st: the one place a held key's verdict is acted on, for the
// engine after a PostgreSQL statement and for SQLite inside its batch's
// transaction. A replay or rejection is recorded by a statement that fails
// if the key's payment is missing; forgetting an expired key, and rejecting
// a version 1 key (whose params, which it did not store, are its
// payment's), read the payment first. A key whose payment is missing is a
// damaged database: the request fails rather than create a payment
// (TestCreateNeverMistakesAnErrorForAReplay). A forgotten key answers
// retry: the request goes on as new; a key past its TTL whose payment has
// work in flight (Payment.inFlight) is not forgotten but judged as if
// fresh. A request's own key (its statement run again) is answered by
// ownAnswer, recording nothing.
func settleHeld(ctx context.Context, st settler, cmd *command, held *heldKey, now time.Time, keyTTL time.Duration) (answer, error) {
	expiredBefore := now.Add(-keyTTL)
	v, err := judgeHeld(ctx, st, cmd, held, expiredBefore)
	if err != nil {
		return answer{}, err
	}
	if v == verdictForget {
		return answer{kind: answerRetry}, st.forgetKey(ctx, held.id, expiredBefore)
	}
	if v == verdictReplay {
		return st.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeReplayed, paymentID: held.paymentID, held: held, now: now})
	}
	if v == verdictOwn {
		return ownAnswer(ctx, st, cmd, held)
	}
	if held.params == nil {
		p, err := heldPayment(ctx, st, held)
		if err != nil {
			return answer{}, err
		}
		held.params = version1Params(p)
	}
	return st.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeRejected, paymentID: held.paymentID, held: held, now: now})
}

// judgeHeld is decide's verdict on held for cmd, but a key past its TTL
// (expiredBefore) whose payment has work in flight (Payment.inFlight) is
// judged as if fresh: forgetting it would let a retry start a second
// charge. verdictForget says the key is to be forgotten. settleHeld's and
// heldChange's.
func judgeHeld(ctx context.Context, st settler, cmd *command, held *heldKey, expiredBefore time.Time) (verdict, error) {
	v, err := decide(*held, cmd, expiredBefore)
	if err != nil || v != verdictForget {
		return v, err
	}
	p, err := heldPayment(ctx, st, held)
	if err != nil {
		return 0, err
	}
	if !p.inFlight() {
		return verdictForget, nil
	}
	return decide(*held, cmd, time.Time{})
}

// heldPayment reads the payment held's key names; its absence is a
// damaged database, an error.
func heldPayment(ctx context.Context, st settler, held *heldKey) (Payment, error) {
	p, ok, err := st.readPayment(ctx, held.paymentID)
	if err != nil {
		return Payment{}, err
	}
	if !ok {
		return Payment{}, fmt.Errorf("key %d names payment %s, which does not exist", held.id, held.paymentID)
	}
	return p, nil
}

// ownAnswer answers a request whose key its own earlier run claimed (a
// statement run again after its answer was lost): created or applied, with
// the payment, and a refund's refund, as they are now.
func ownAnswer(ctx context.Context, st settler, cmd *command, held *heldKey) (answer, error) {
	p, err := heldPayment(ctx, st, held)
	if err != nil {
		return answer{}, err
	}
	a := answer{kind: answerSettled, outcome: OutcomeApplied, payment: p}
	if cmd.op == OpCreate {
		a.outcome = OutcomeCreated
	}
	if held.refundID != "" {
		a.refund, err = st.readRefund(ctx, held.refundID, p)
	}
	return a, err
}

// finish turns a settled answer into what the caller gets, and tells the
// metrics.
func (s *Service) finish(cmd *command, a answer) (answer, error) {
	switch a.kind {
	case answerNotFound:
		return answer{}, fmt.Errorf("payment %q: %w", cmd.paymentID, ErrNotFound)
	case answerForbidden:
		return answer{}, fmt.Errorf("payment %q belongs to another client: %w", cmd.paymentID, ErrForbidden)
	case answerNotForeseen:
		return a, nil // nothing done yet: changeBy goes on
	}
	s.onAttempt(cmd.op, a.outcome, cmd.Transport)
	switch a.outcome {
	case OutcomeRejected:
		return answer{}, rejection(*a.held, cmd)
	case OutcomeRefused:
		return answer{}, a.refused
	}
	return a, nil
}

// newPaymentID makes the id a payment gets if a create makes it: "pay_" and
// a ULID, which sorts by creation time to the millisecond. newRefundID is
// the same for refunds. Their 80 bits after the time come from crypto/rand,
// each id afresh: a payment's id is all a payments:create token needs to
// read it, and ulid.Make's come from math/rand, each the one before plus
// less than 2^32 within a millisecond.
func newPaymentID() string { return "pay_" + secureULID() }
func newRefundID() string  { return "ref_" + secureULID() }

func secureULID() string { return ulid.MustNew(ulid.Now(), rand.Reader).String() }
