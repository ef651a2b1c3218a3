package payments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
)

// opRefused and opFailed are the states of a change the processor refused,
// and of a refund it failed.
const (
	opRefused = "REFUSED"
	opFailed  = "FAILED"
)

// errKeyClaimedMeanwhile: phase 1 found its key claimed by a transaction
// that committed while it ran; it is rolled back and run again.
var errKeyClaimedMeanwhile = errors.New("the key was claimed meanwhile")

// foreseen says whether a change to p may take the batch statements: p was
// made at the sandbox, whose answers are known beforehand, and has nothing
// in flight there (a server configured for Stripe sends a sandbox
// payment's changes the phased way, which leaves a capture or cancel
// pending and a refund's amount reserved until the answer is recorded).
func foreseen(p Payment) bool {
	return p.Processor == processor.NameSandbox && p.PendingOperation == "" && p.Reserved.Minor == 0
}

// foreseesChanges says whether captures, cancels and refunds take the
// batch statements: the processor's answer to them is known beforehand.
func (s *Service) foreseesChanges() bool {
	f, ok := s.proc.(processor.Foreseer)
	return ok && f.ForeseesChanges()
}

// changeAtProcessor runs a capture, cancel or refund at a processor that
// cannot foresee its answer (Stripe) in phases, each in transactions of
// its own rather than in the batch statements (the processor's round trip
// dwarfs the database's):
//
//  1. Under the payment's row lock: the key (a replay answers as the
//     key's operation stands; a reuse is rejected), the rules (a capture
//     or cancel pending refuses another with PAYMENT_STATE_CONFLICT; a
//     refund counts what refunds in flight reserve), then the operation
//     stored, leased to the request: a capture or cancel as the payment's
//     pending_operation, a refund as a PROCESSING refund whose amount is
//     reserved. The key is claimed for that operation.
//  2. The processor is asked, with the operation's key, within
//     PROCESSOR_TIMEOUT.
//  3. What it said is settled (record, in operations.go) only while the
//     operation is unsettled; an unknown outcome is left to recovery.
func (s *Service) changeAtProcessor(ctx context.Context, cmd *command) (ChangeResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout+requestTimeout)
	defer cancel()
	if !plausibleID(cmd.paymentID) {
		return ChangeResult{}, fmt.Errorf("payment %q: %w", cmd.paymentID, ErrNotFound)
	}
	var st started
	var err error
	for range maxRounds {
		err = withStatementTimeout(ctx, func(ctx context.Context) error {
			return s.store.db().Tx(ctx, func(r sqlq.Runner) error {
				var err error
				st, err = s.startChange(ctx, r, cmd)
				return err
			})
		})
		if !errors.Is(err, errKeyClaimedMeanwhile) {
			break
		}
	}
	if err != nil {
		return ChangeResult{}, err
	}
	if st.err != nil || st.result != nil {
		if st.outcome != "" {
			s.onAttempt(cmd.op, st.outcome, cmd.Transport)
		}
		if st.err != nil {
			return ChangeResult{}, st.err
		}
		if st.outcome == OutcomeApplied {
			// The request's own key (heldChange): the foreseen call of the
			// change its batch statement stored was not counted, its
			// answer lost.
			s.onCall(cmd.op, CallSucceeded, 0)
		}
		return *st.result, nil
	}
	// Counted once the processor's word settles it (record), applied or
	// refused.
	return s.askChange(ctx, st)
}

// started is what phase 1 came to: an answer already (result or err, with
// the attempt's outcome), or an operation to ask.
type started struct {
	result  *ChangeResult
	err     error
	outcome Outcome
	op      operationRow
	ref     string // the payment's processor reference
	payment Payment
	// leasedAt is when op's lease was set (callTime).
	leasedAt time.Time
}

// startChange is phase 1, in transaction r.
func (s *Service) startChange(ctx context.Context, r sqlq.Runner, cmd *command) (started, error) {
	p, err := scanPayment(r.QueryRow(ctx, s.store.lockPaymentSQL(), cmd.paymentID))
	if errors.Is(err, sqlq.ErrNoRows) {
		return started{err: fmt.Errorf("payment %q: %w", cmd.paymentID, ErrNotFound)}, nil
	}
	if err != nil {
		return started{}, fmt.Errorf("lock payment: %w", err)
	}
	amount, stop := stopped(cmd, p)
	if stop != nil {
		if stop.kind == answerForbidden {
			return started{err: fmt.Errorf("payment %q belongs to another client: %w", cmd.paymentID, ErrForbidden)}, nil
		}
		return started{err: stop.err}, nil
	}
	if amount > 0 && cmd.op != OpCancel {
		if err := checkAmount(s.processorNamed(p.Processor), Money{Minor: amount, Currency: p.Amount.Currency}); err != nil {
			return started{err: err}, nil
		}
	}
	now := s.now()
	tx := liteTx{r}
	held, err := scanHeld(r.QueryRow(ctx, commonSQL.SQL("read_key"), p.ClientID, cmd.key))
	switch {
	case errors.Is(err, sqlq.ErrNoRows):
	case err != nil:
		return started{}, fmt.Errorf("read key: %w", err)
	default:
		if st, done, err := s.heldChange(ctx, tx, cmd, held, now); done || err != nil {
			return st, err
		}
	}
	if refused := pendingRefusal(cmd, p, amount); refused != nil {
		a, err := tx.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeRefused, paymentID: p.ID, refused: refused, now: now})
		if err != nil {
			return started{}, err
		}
		return started{err: a.refused, outcome: OutcomeRefused}, nil
	}
	if !s.reachable(p.Processor) {
		return started{err: &ProcessorUnavailableError{Processor: p.Processor}}, nil
	}
	return s.storeChange(ctx, tx, cmd, p, amount, now)
}

// heldChange settles a request whose key is held (decide): a replay answers
// as the key's operation stands, a reuse is rejected, an expired key is
// forgotten (done false: the request goes on as new) unless its payment has
// work in flight. The request's own key answers as a replay would, but is
// not one: nothing is recorded, and it is counted as the applied change it
// is. This path's operation ids are fresh in every transaction, so it meets
// its own key only when a batch statement applied the request, lost its
// answer, and then found the payment no longer foreseen (work in flight at
// a processor).
func (s *Service) heldChange(ctx context.Context, tx liteTx, cmd *command, held *heldKey, now time.Time) (started, bool, error) {
	v, err := judgeHeld(ctx, tx, cmd, held, now.Add(-s.keyTTL))
	if err != nil {
		return started{}, true, err
	}
	switch v {
	case verdictForget:
		return started{}, false, tx.forgetKey(ctx, held.id, now.Add(-s.keyTTL))
	case verdictReject:
		if held.params == nil {
			p, _, err := tx.readPayment(ctx, held.paymentID)
			if err != nil {
				return started{}, true, err
			}
			held.params = version1Params(p)
		}
		if _, err := tx.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeRejected, paymentID: held.paymentID, held: held, now: now}); err != nil {
			return started{}, true, err
		}
		return started{err: rejection(*held, cmd), outcome: OutcomeRejected}, true, nil
	}
	var a answer
	outcome := OutcomeReplayed
	if v == verdictOwn {
		outcome = OutcomeApplied
		a, err = ownAnswer(ctx, tx, cmd, held)
	} else {
		a, err = tx.recordAttempt(ctx, record{cmd: cmd, outcome: outcome, paymentID: held.paymentID, held: held, now: now})
	}
	if err != nil {
		return started{}, true, err
	}
	var opID, state string
	var code *string
	err = tx.r.QueryRow(ctx, commonSQL.SQL("key_operation"), held.id).Scan(&opID, &state, &code)
	if err != nil && !errors.Is(err, sqlq.ErrNoRows) {
		return started{}, true, fmt.Errorf("read the key's operation: %w", err)
	}
	if state == opRefused {
		return started{err: &ProcessorRefusedError{Operation: cmd.op, PaymentID: held.paymentID, Code: deref(code),
			Replayed: v != verdictOwn}, outcome: outcome}, true, nil
	}
	return started{result: &ChangeResult{Payment: a.payment, Refund: a.refund, Replayed: v != verdictOwn}, outcome: outcome}, true, nil
}

// pendingRefusal is refusal (decide.go) with what is in flight at the
// processor: a pending capture or cancel, and refunds' reservations.
func pendingRefusal(cmd *command, p Payment, amount int64) error {
	if cmd.op != OpRefund && p.PendingOperation != "" && p.Status == StatusAuthorized {
		return &StateConflictError{Operation: cmd.op, Status: p.Status, PendingOperation: p.PendingOperation}
	}
	if cmd.op == OpRefund && slices.Contains(rules[OpRefund].from, p.Status) {
		// All that is left, when no amount was given, is net of what is in
		// flight already (changeAmountFor, via rules).
		if available := p.Refundable().Minor; amount > available || amount < 1 {
			cur := p.Amount.Currency
			return &AmountExceedsError{Operation: cmd.op, Requested: Money{Minor: amount, Currency: cur},
				Available: Money{Minor: available, Currency: cur}}
		}
		return nil
	}
	return refusal(cmd, p, amount)
}

// storeChange stores the operation and claims the key for it.
func (s *Service) storeChange(ctx context.Context, tx liteTx, cmd *command, p Payment, amount int64, now time.Time) (started, error) {
	id := newOperationID()
	var refundID *string
	if cmd.op == OpRefund {
		refundID = &cmd.newID
		if _, err := tx.r.Exec(ctx, commonSQL.SQL("insert_pending_refund"), cmd.newID, p.ID, amount, cmd.reason, cmd.key, now); err != nil {
			return started{}, fmt.Errorf("store refund: %w", err)
		}
		if _, err := tx.r.Exec(ctx, commonSQL.SQL("reserve_refund"), p.ID, amount); err != nil {
			return started{}, fmt.Errorf("reserve refund: %w", err)
		}
	} else if _, err := tx.r.Exec(ctx, commonSQL.SQL("start_pending"), p.ID, string(cmd.op)); err != nil {
		return started{}, fmt.Errorf("mark %s pending: %w", cmd.op, err)
	}
	n, err := tx.r.Exec(ctx, commonSQL.SQL("claim_key"), p.ClientID, cmd.key, string(cmd.op), cmd.fp,
		fingerprintVersion, cmd.encoded, p.ID, refundID, now, id)
	if err != nil {
		return started{}, fmt.Errorf("claim key: %w", err)
	}
	if n == 0 {
		// Claimed meanwhile by a request on another payment of this
		// client: roll back, and look again, to find the key held.
		return started{}, errKeyClaimedMeanwhile
	}
	lease := s.lease()
	_, err = tx.r.Exec(ctx, commonSQL.SQL("insert_operation"), id, p.ID, refundID, string(cmd.op), p.Processor,
		amount, p.Amount.Currency, "{}", opPending, nil, 0, lease.owner, now.Add(lease.hold), now.Add(lease.due), now, nil)
	if err != nil {
		return started{}, fmt.Errorf("store processor operation: %w", err)
	}
	// APPLIED until the processor says otherwise: a refusal makes it
	// REFUSED when it is settled (settleAttempt), which finds it by id.
	attempt := attemptRow{paymentID: p.ID, outcome: OutcomeApplied, at: now, refundID: refundID, requestID: &id}
	if err := tx.insertAttempt(ctx, cmd, attempt); err != nil {
		return started{}, err
	}
	op := operationRow{id: id, paymentID: p.ID, refundID: refundID, operation: cmd.op, processor: p.Processor,
		key: opKey(id), amountMinor: amount, currency: p.Amount.Currency, state: ""}
	return started{op: op, ref: p.ProcessorReference, payment: p, leasedAt: now}, nil
}

// askChange is phases 2 and 3 of a change: ask, then settle or postpone.
// It answers the operation as it then stands, whoever's word settled it:
// the answer every replay of its key gives.
func (s *Service) askChange(ctx context.Context, st started) (ChangeResult, error) {
	op := st.op
	callCtx, cancel := context.WithTimeout(ctx, s.callTime(st.leasedAt))
	start := time.Now()
	out := s.sendChange(callCtx, op, st.ref, st.payment.Amount.Currency)
	took := time.Since(start)
	cancel()
	// out is judged already (sendChange: capturedAsAsked), as recorded
	// and as answered.
	p, refund, settled, err := s.recordSettling(ctx, op, out, callWrite, took)
	if err != nil {
		return ChangeResult{}, err
	}
	state, code := out.opState, out.code
	if !settled {
		// The operation stands as someone else's word left it (recovery,
		// once this request's lease ran out), or unsettled. Its key's
		// replays answer that (heldChange), so this first answer does too.
		if state, code, err = s.operationState(ctx, op.id); err != nil {
			return ChangeResult{}, err
		}
	}
	if state == opRefused {
		return ChangeResult{}, &ProcessorRefusedError{Operation: op.operation, PaymentID: op.paymentID, Code: code}
	}
	res := ChangeResult{Payment: p, Refund: refund}
	if op.refundID != nil && refund == nil { // not settled by this request's word
		if res.Refund, err = readRefund(ctx, s.store.db(), *op.refundID, p); err != nil {
			return ChangeResult{}, err
		}
	}
	return res, nil
}

// operationState is the state and code of operation id as it stands.
func (s *Service) operationState(ctx context.Context, id string) (state, code string, err error) {
	var c *string
	if err := s.store.db().QueryRow(ctx, commonSQL.SQL("operation_state"), id).Scan(&state, &c); err != nil {
		return "", "", fmt.Errorf("read the state of operation %s: %w", id, err)
	}
	return state, deref(c), nil
}

// sendChange sends a change's write with its operation's key, to the
// processor its payment was made at.
func (s *Service) sendChange(ctx context.Context, op operationRow, ref, currency string) outcome {
	proc := s.processorNamed(op.processor)
	switch op.operation {
	case OpCapture:
		res, err := proc.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: op.key, Reference: ref,
			AmountMinor: op.amountMinor, Currency: currency})
		return capturedAsAsked(op, changeOutcome(op.operation, res, err))
	case OpCancel:
		res, err := proc.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: op.key, Reference: ref})
		return changeOutcome(op.operation, res, err)
	}
	res, err := proc.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: op.key, PaymentReference: ref,
		RefundID: deref(op.refundID), AmountMinor: op.amountMinor, Currency: currency})
	return refundOutcome(res, err)
}

// changeOutcome reads a capture's or cancel's answer (or a read of its
// payment): the state the operation aims at settles it; a refusal settles
// it REFUSED; anything else waits.
func changeOutcome(op Operation, res processor.Payment, err error) outcome {
	if err != nil {
		o := errorOutcome(err)
		if o.settled {
			o.opState, o.status = opRefused, StatusAuthorized
		}
		// A key the processor first saw with other parameters is answered
		// so for as long as it keeps the key. A read that finds the payment
		// still authorized then sends the change under a new key
		// (resend.go), which cannot move money twice: a payment is captured
		// or canceled once. A create or refund is only read (a second one
		// could be made while the key's first request still runs).
		var pe *processor.Error
		if errors.As(err, &pe) && pe.Kind == processor.KindIdempotencyMismatch {
			o.next = nextStored
		}
		return o
	}
	o := outcome{reference: res.Reference, call: CallSucceeded, capturedMinor: res.CapturedMinor, found: string(res.State)}
	switch {
	case op == OpCapture && res.State == processor.PaymentCaptured:
		o.settled, o.opState, o.status = true, opSucceeded, StatusCaptured
	case op == OpCancel && res.State == processor.PaymentCanceled:
		o.settled, o.opState, o.status = true, opSucceeded, StatusCanceled
	case res.State == processor.PaymentCaptured || res.State == processor.PaymentCanceled:
		// The other of the two happened (an authorization the processor let
		// expire, a capture in its dashboard): this one cannot, and the
		// payment is what the processor says.
		o.settled, o.opState, o.call, o.code = true, opRefused, CallDeclined, "payment_"+string(res.State)
		o.status = StatusCanceled
		if res.State == processor.PaymentCaptured {
			o.status = StatusCaptured
		}
	default:
		o.next = "read"
	}
	return o
}

// capturedAsAsked refuses capture op when the processor's word, out,
// finds its payment captured for another amount than op asks: another
// party captured it (staff in Stripe's dashboard), since op captures its
// amount or nothing. The same amount is op done, as far as anyone can
// tell (its own try past the processor's key lifetime looks the same), and
// money moved once either way. The payment is still set to what the
// processor holds, announced under its own key (applyChange). Every word
// on a capture is judged so, its answer (sendChange) and a read of it
// (record, for recovery's), so the key has one answer whoever brings it.
func capturedAsAsked(op operationRow, out outcome) outcome {
	if op.operation != OpCapture || !out.settled || out.opState != opSucceeded || out.capturedMinor <= 0 ||
		out.capturedMinor == op.amountMinor {
		return out
	}
	out.opState, out.call, out.code = opRefused, CallDeclined, "payment_"+string(processor.PaymentCaptured)
	return out
}

// refundOutcome reads a refund's answer (or a read of it).
func refundOutcome(res processor.Refund, err error) outcome {
	if err != nil {
		o := errorOutcome(err)
		if o.settled {
			o.opState = opRefused
		}
		return o
	}
	o := outcome{reference: res.Reference, call: CallSucceeded, found: string(res.State)}
	switch res.State {
	case processor.RefundSucceeded:
		o.settled, o.opState = true, opSucceeded
	case processor.RefundFailed:
		o.settled, o.opState, o.code, o.call = true, opFailed, res.FailureCode, CallDeclined
	default:
		o.next = "read" // pending: read it again later
	}
	return o
}

// applyChange settles a capture, cancel or refund: the payment (and the
// refund, returned) as the processor left them, and the event.
func (s *Service) applyChange(ctx context.Context, r sqlq.Runner, op operationRow, out outcome, now time.Time, p *Payment) (*Refund, error) {
	if op.operation == OpRefund {
		return s.applyRefund(ctx, r, op, out, now, p)
	}
	amount := op.amountMinor
	if out.status == StatusCaptured && out.capturedMinor > 0 {
		amount = out.capturedMinor // what the processor captured is what was
	}
	got, err := scanPayment(r.QueryRow(ctx, commonSQL.SQL("settle_change"), op.paymentID, string(out.status), amount, now))
	if err != nil {
		return nil, fmt.Errorf("settle %s of %s: %w", op.operation, op.paymentID, err)
	}
	*p = got
	switch {
	case out.opState == opSucceeded:
		key, err := s.keyOf(ctx, r, op)
		if err != nil {
			return nil, err
		}
		return nil, insertEvent(ctx, r, eventTypeOf(op.operation), key, got, nil, now)
	case got.Status == StatusCaptured || got.Status == StatusCanceled:
		// Refused because the processor did the other: announce what it
		// did, under the payment's own key, since no request of CMPay's did.
		typ := EventCanceled
		if got.Status == StatusCaptured {
			typ = EventCaptured
		}
		return nil, insertEvent(ctx, r, typ, got.IdempotencyKey, got, nil, now)
	}
	return nil, nil // refused: nothing applied, nothing announced
}

// applyRefund ends a refund SUCCEEDED (counted refunded) or FAILED (a
// refusal too: its reservation released), and returns it as it then is.
func (s *Service) applyRefund(ctx context.Context, r sqlq.Runner, op operationRow, out outcome, now time.Time, p *Payment) (*Refund, error) {
	status, refunded, typ := RefundFailed, int64(0), EventRefundFailed
	if out.opState == opSucceeded {
		status, refunded, typ = RefundSucceeded, op.amountMinor, EventRefunded
	}
	if _, err := r.Exec(ctx, commonSQL.SQL("settle_refund"), *op.refundID, string(status), nullable.String(out.code),
		nullable.String(out.reference), now); err != nil {
		return nil, fmt.Errorf("settle refund %s: %w", *op.refundID, err)
	}
	got, err := scanPayment(r.QueryRow(ctx, commonSQL.SQL("settle_refund_payment"), op.paymentID, op.amountMinor, refunded))
	if err != nil {
		return nil, fmt.Errorf("settle refund %s of %s: %w", *op.refundID, op.paymentID, err)
	}
	*p = got
	refund, err := readRefund(ctx, r, *op.refundID, got)
	if err != nil {
		return nil, err
	}
	return refund, insertEvent(ctx, r, typ, refund.IdempotencyKey, got, refund, now)
}

// settleAttempt is what became of the request that started op, a capture,
// cancel or refund settled now by out: REFUSED when the processor refused
// it, or failed the refund (no money moved either way), its attempt
// rewritten so in the settlement's transaction; APPLIED otherwise. found is
// false when no attempt names op (one stored before attempts did).
func settleAttempt(ctx context.Context, r sqlq.Runner, op operationRow, out outcome) (o Outcome, transport string, found bool, err error) {
	q, o := commonSQL.SQL("applied_attempt"), OutcomeApplied
	if out.opState == opRefused || out.opState == opFailed {
		q, o = commonSQL.SQL("refuse_attempt"), OutcomeRefused
	}
	err = r.QueryRow(ctx, q, op.paymentID, op.id).Scan(&transport)
	if errors.Is(err, sqlq.ErrNoRows) {
		return o, "", false, nil
	}
	if err != nil {
		return o, "", false, fmt.Errorf("settle the attempt of %s %s: %w", op.operation, op.id, err)
	}
	return o, transport, true, nil
}

// keyOf is the key of the request that started op: its event's key.
func (s *Service) keyOf(ctx context.Context, r sqlq.Runner, op operationRow) (string, error) {
	var key string
	err := r.QueryRow(ctx, commonSQL.SQL("operation_key"), op.id).Scan(&key)
	if errors.Is(err, sqlq.ErrNoRows) {
		return "", nil // forgotten past its TTL
	}
	return key, err
}
