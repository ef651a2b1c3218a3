package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
)

// Money at a processor. An operation that moves money is stored before the
// processor is asked (a processor_operations row, whose key
// "cmpay_<operation id>" is the one the processor gets on every try), then
// settled by what the processor says, in one transaction that changes it
// only while it is unsettled: whoever brings the processor's word first
// (the request, or the recovery worker of any instance) settles it, and
// no one settles it on anything else. docs/design/processors.md has the
// phases, the lease and recovery.
//
// A processor whose answer is a pure function of the request (the
// sandbox: processor.Foreseer) is asked first instead, and its answer
// stored by the batch statement that creates or changes the payment, with
// no operation or call row: nothing was sent anywhere, so there is nothing
// to recover, and the call is read from the payment (a create's) or from
// the change's attempt (sql/by_payment.sql).

// The states of a processor operation (models.ProcessorOperation.State).
const (
	opPending   = "PENDING"
	opUnknown   = "UNKNOWN"
	opSucceeded = "SUCCEEDED"
	opDeclined  = "DECLINED"
)

// The kinds of processor call (models.ProcessorCall.Kind), as stored.
const (
	callWrite = string(CallWrite)
	callRead  = string(CallRead)
)

// leaseMargin is how much longer than the processor's timeout the request
// that stored an operation holds it: the call's own time, and the
// transaction that settles it.
const leaseMargin = 5 * time.Second

// A create batch whose answer was lost is run again, and its creates take
// the time their lease was set from (createPlan.leasedAt) from the re-run,
// up to statementTimeout after the lease the first run stored: their calls
// end before that lease only while the margin covers a statement's time.
// This fails to compile when it does not.
var _ [leaseMargin - statementTimeout]struct{}

// leaseTerms are what a leased operation is stored with: its owner, how
// long the lease holds, and when the operation is due for recovery if no
// one settles it before.
type leaseTerms struct {
	owner     string
	hold, due time.Duration
}

// lease is the terms of an operation this instance stores and asks now.
func (s *Service) lease() leaseTerms {
	return leaseTerms{owner: s.instance, hold: s.timeout + leaseMargin, due: s.timeout + s.recoveryAfter}
}

// createPlan is what a create writes about its processor: the payment's
// first status and, for a foreseen answer, what the processor said.
type createPlan struct {
	processor   string
	status      Status
	reference   *string
	declineCode *string
	opID        string
	// opState is SUCCEEDED or DECLINED when the answer was foreseen (the
	// operation is stored settled), PENDING when the processor is asked
	// after the payment is stored.
	opState string
	request string // the operation's request, JSON (opRequest)
	lease   leaseTerms
	// leasedAt is when the statement that stored the operation set its
	// lease (lease.hold from then): the call asked next ends within
	// PROCESSOR_TIMEOUT of it (callTime).
	leasedAt time.Time
	preq     processor.CreatePaymentRequest
	// call and took are the foreseen call's outcome and duration, told to
	// OnProcessorCall only if the payment is created with it: a request
	// that turns out to be a replay stores no call.
	call CallOutcome
	took time.Duration
}

// storesOperation says whether the create stores an operation row: only
// when the processor is asked after the payment is stored. A foreseen
// answer is stored with the payment alone (models.Payment.CreateForeseen);
// create_batch.sql says the same in SQL.
func (pl *createPlan) storesOperation() bool { return pl.opState == opPending }

// planned is cmd's plan: the Service's (planCreate), or for a command
// built without one (the engine's own tests), a create the sandbox
// approved at once.
func (cmd *command) planned() *createPlan {
	if cmd.plan == nil {
		cmd.plan = approvedPlan(cmd)
	}
	return cmd.plan
}

// approvedPlan is a create approved at once by the sandbox.
func approvedPlan(cmd *command) *createPlan {
	id := createOpID(cmd.newID)
	pl := &createPlan{processor: processor.NameSandbox, status: StatusAuthorized, opID: id, opState: opSucceeded, request: "{}",
		call: CallSucceeded}
	if cmd.capture {
		pl.status = StatusCaptured
	}
	return pl
}

// opRequest is what an operation asks beyond its amount, kept so that
// recovery asks again exactly the same.
type opRequest struct {
	Method  Method `json:"method,omitempty"`
	Token   string `json:"token,omitempty"`
	Capture bool   `json:"capture,omitempty"`
}

// encodeRequest is a create's opRequest as JSON. Every create encodes
// one, so a request of plain values (the method always, a token of
// characters JSON writes as they are) is written here directly.
func encodeRequest(cmd *command) string {
	if !plainJSON(cmd.token) {
		b, _ := json.Marshal(opRequest{Method: cmd.method, Token: cmd.token, Capture: cmd.capture})
		return string(b)
	}
	s := `{"method":"` + string(cmd.method) + `"`
	if cmd.token != "" {
		s += `,"token":"` + cmd.token + `"`
	}
	if cmd.capture {
		s += `,"capture":true`
	}
	return s + "}"
}

func newOperationID() string { return "op_" + ulid.Make().String() }

// createOpID is the id of the operation that creates payment paymentID:
// "op_" and the payment's own ULID, so that the create's operation, and
// the key its processor gets, follow from the payment even where no
// operation row is stored (createPlan.storesOperation). The
// processor_calls_of statement (sql/by_payment.sql) derives it the same
// way in SQL.
func createOpID(paymentID string) string { return "op_" + strings.TrimPrefix(paymentID, "pay_") }

// opKey is the idempotency key the processor gets for operation id.
func opKey(id string) string { return "cmpay_" + id }

// planCreate decides how cmd's payment starts: by the foreseen answer, or
// PROCESSING with an operation leased to this request.
func (s *Service) planCreate(ctx context.Context, cmd *command) {
	id := createOpID(cmd.newID)
	pl := &createPlan{processor: s.proc.Name(), opID: id, request: encodeRequest(cmd), lease: s.lease(),
		preq: processor.CreatePaymentRequest{IdempotencyKey: opKey(id), PaymentID: cmd.newID,
			AmountMinor: cmd.amount.Minor, Currency: cmd.amount.Currency, Method: processor.Method(cmd.method),
			PaymentMethodToken: cmd.token, Capture: cmd.capture}}
	pl.status, pl.opState = StatusProcessing, opPending
	cmd.plan = pl
	f, ok := s.proc.(processor.Foreseer)
	if !ok || !f.ForeseesCreate(pl.preq) {
		return
	}
	// No deadline of its own: a foreseen answer is given at once.
	start := time.Now()
	res, err := s.proc.CreatePayment(ctx, pl.preq)
	took := time.Since(start)
	out := createOutcome(res, err)
	if !out.settled {
		return // not foreseen after all: stored PROCESSING and asked again
	}
	pl.status, pl.opState = out.status, out.opState
	pl.reference, pl.declineCode = nullable.String(out.reference), nullable.String(out.code)
	pl.call, pl.took = out.call, took
}

// outcome is what one processor call came to for its operation.
type outcome struct {
	// settled: the processor's word, which settles the operation.
	settled bool
	opState string
	status  Status // a create's payment status, when settled
	// reference is the processor's reference, code its error or decline
	// code, when it gave them.
	reference, code string
	// next action is a PENDING payment's, from the processor's answer.
	nextAction *processor.NextAction
	// capturedMinor is what the processor says it captured, when it says
	// (a capture's answer, or a capture made elsewhere).
	capturedMinor int64
	call          CallOutcome
	// found is the state the processor's answer gave its record, in its
	// own words; "" when it gave none.
	found string
	// next is, for an unsettled outcome, what recovery does next: ask
	// again (""), read the processor's record (nextRead), or read it and
	// send again under a new key if it shows nothing done (nextStored).
	next string
	// absent: a consistent read shows that the operation did not happen
	// at the processor (a capture's or cancel's payment still authorized;
	// no refund with its id in the payment's list).
	absent bool
	// class is how the call failed, for the log lines (errorClass); ""
	// when it did not.
	class string
}

// What recovery does next with an unsettled operation (outcome.next,
// stored as processor_operations.last_error); "" is: ask again.
const (
	// nextRead: read the processor's record, where asking again cannot
	// settle it (an idempotency mismatch, a key past its lifetime).
	nextRead = "read"
	// nextStored: the key's answer is a final error the processor stores
	// and gives again for as long as it keeps the key (Stripe: a 500,
	// replayed), so the key's request has ended. Read the record; if it
	// shows the operation did not happen, send it again under a new key
	// (resend.go).
	nextStored = "stored"
)

// createOutcome reads a create's (or a read's) answer. A result settles
// it in the state it names, unless that state is not final for a create
// (processing, requires_action); a refusal settles it DECLINED; anything
// else leaves it unsettled.
func createOutcome(res processor.Payment, err error) outcome {
	if err != nil {
		return errorOutcome(err)
	}
	o := outcome{reference: res.Reference, call: CallSucceeded, found: string(res.State)}
	switch res.State {
	case processor.PaymentAuthorized:
		o.status = StatusAuthorized
	case processor.PaymentCaptured:
		o.status = StatusCaptured
	case processor.PaymentPending:
		o.status, o.nextAction = StatusPending, res.NextAction
	case processor.PaymentCanceled:
		o.status = StatusCanceled
	case processor.PaymentExpired:
		o.status = StatusExpired
	case processor.PaymentDeclined:
		o.status, o.code, o.call = StatusDeclined, res.DeclineCode, CallDeclined
		o.settled, o.opState = true, opDeclined
		return o
	default:
		// Accepted but not finished: read it again later.
		o.next = "read"
		return o
	}
	o.settled, o.opState = true, opSucceeded
	return o
}

// errorOutcome reads a failed call: a refusal settles the operation
// DECLINED; a known error that is no refusal, or an unknown one, leaves
// it to recovery, which reads the record where asking again cannot
// settle it (a replayed 500, an idempotency mismatch, credentials).
func errorOutcome(err error) outcome {
	var pe *processor.Error
	if !errors.As(err, &pe) {
		return outcome{call: CallUnknown, class: classUnknown}
	}
	if pe.Refused() {
		return outcome{settled: true, opState: opDeclined, status: StatusDeclined, reference: pe.Reference,
			code: pe.Code, call: CallDeclined}
	}
	o := outcome{reference: pe.Reference, code: pe.Code, call: CallUnknown, class: errorClass(err)}
	if pe.Known() {
		o.call = CallError
	}
	// A replayed 500 and a mismatch answer the same under the key every
	// time: only a read can settle them (and after a replayed 500, whose
	// request has ended, a new key; after a capture's or cancel's
	// mismatch too: changeOutcome). A 401 or 403 is not stored under the
	// idempotency key, so once CMPay's API key is fixed, asking again is
	// safe; until then reads are refused too, and the call's code says so
	// (CodeCredentialsRefused), whatever the processor's code for it.
	switch {
	case pe.Kind == processor.KindServerError && pe.Replayed:
		o.next = nextStored
	case pe.Kind == processor.KindIdempotencyMismatch:
		o.next = nextRead
	}
	if o.code == "" || pe.Kind == processor.KindAuthentication {
		o.code = pe.Kind.String()
	}
	return o
}

// CodeCredentialsRefused is the code of a processor call refused for
// CMPay's credentials (HTTP 401 or 403; Stripe's own code for it varies,
// and often there is none): the one case recovery cannot resolve alone,
// since reads are refused too, so the admin shows it as waiting for the
// processor's API key to be fixed.
const CodeCredentialsRefused = "authentication"

// operationRow is a stored processor operation (read_operation).
type operationRow struct {
	id, paymentID string
	refundID      *string
	operation     Operation
	processor     string
	key           string
	amountMinor   int64
	currency      string
	request       opRequest
	state         string
	sends         int
	lastError     *string
	// createdAt is when the operation was stored, and its key first sent;
	// keySince when recovery gave it its current key (nil: its first);
	// storedAt when recovery first saw a stored error under that key (nil:
	// none yet); lastSendAt when it was last about to be sent (nil: a row
	// from before that was kept). read_operation only; zero elsewhere.
	createdAt                      time.Time
	keySince, storedAt, lastSendAt *time.Time
}

func scanOperation(row sqlq.Row) (operationRow, error) {
	var o operationRow
	var req string
	if err := row.Scan(&o.id, &o.paymentID, &o.refundID, &o.operation, &o.processor, &o.key, &o.amountMinor,
		&o.currency, &req, &o.state, &o.sends, &o.lastError, &o.createdAt,
		&o.keySince, &o.storedAt, &o.lastSendAt); err != nil {
		return operationRow{}, err
	}
	if err := json.Unmarshal([]byte(req), &o.request); err != nil {
		return operationRow{}, fmt.Errorf("operation %s: request: %w", o.id, err)
	}
	return o, nil
}

// askCreate is phases 2 and 3 of a create whose answer was not foreseen:
// the processor is asked, within PROCESSOR_TIMEOUT, and what it said is
// settled (or left to recovery). The answer is the payment as it then is.
func (s *Service) askCreate(ctx context.Context, cmd *command) (Payment, error) {
	// Once asked, the answer is recorded even if the client went away:
	// the call's time, then the transaction's.
	ctx, cancelAll := context.WithTimeout(context.WithoutCancel(ctx), s.timeout+requestTimeout)
	defer cancelAll()
	pl := cmd.plan
	op := operationRow{id: pl.opID, paymentID: cmd.newID, operation: OpCreate, key: opKey(pl.opID)}
	callCtx, cancel := context.WithTimeout(ctx, s.callTime(pl.leasedAt))
	start := time.Now()
	res, err := s.proc.CreatePayment(callCtx, pl.preq)
	took := time.Since(start)
	cancel()
	out := createOutcome(res, err)
	if s.batchSettles(cmd.method, out) {
		return s.settleCreate(ctx, op, out, took)
	}
	return s.record(ctx, op, out, callWrite, took)
}

// record writes one call of op and what it came to, in one transaction:
// the call row always; then, if the outcome settles op and op is still
// unsettled, op's state, the payment's and its event, and for a change
// its request's attempt (counted then, applied or refused); else op
// postponed for recovery. It answers the payment as it is after. A
// capture's word is judged first (capturedAsAsked).
func (s *Service) record(ctx context.Context, op operationRow, out outcome, kind string, took time.Duration) (Payment, error) {
	p, _, _, err := s.recordSettling(ctx, op, capturedAsAsked(op, out), kind, took)
	return p, err
}

// recordSettling is record of out judged already (askChange's, by
// sendChange), and says whether out settled op: false when out settles
// nothing, and when op was settled already, by someone else's word
// (askChange then answers as that word settled it). A refund it settled
// comes back as its transaction left it, so that askChange need not read
// it again.
func (s *Service) recordSettling(ctx context.Context, op operationRow, out outcome, kind string, took time.Duration) (Payment, *Refund, bool, error) {
	s.called(op, kind, out, took)
	now := s.now()
	sends := 0
	if kind == callWrite {
		sends = 1
	}
	var p Payment
	var refund *Refund
	var resolved bool
	var attempt struct {
		outcome   Outcome
		transport string
		found     bool
	}
	// Bounded as a batched statement is (withStatementTimeout).
	err := withStatementTimeout(ctx, func(ctx context.Context) error {
		return s.store.db().Tx(ctx, func(r sqlq.Runner) error {
			if err := insertCall(ctx, r, op, kind, out, now, took); err != nil {
				return err
			}
			if !out.settled {
				next, due := nullable.String(out.next), now.Add(s.recoveryAfter)
				var storedAt *time.Time
				if out.next == nextStored {
					storedAt = &now
					if kind == callWrite {
						// The processor answers, with a stored error: the read
						// that resolves it (resend.go) is due at once.
						due = now
					}
				}
				_, err := r.Exec(ctx, commonSQL.SQL("postpone_operation"), op.id, sends, due, next, s.instance, storedAt)
				if err != nil {
					return fmt.Errorf("postpone operation: %w", err)
				}
				return s.readInto(ctx, r, op.paymentID, &p)
			}
			n, err := r.Exec(ctx, commonSQL.SQL("settle_operation"), op.id, out.opState, nullable.String(out.code), now, sends)
			if err != nil {
				return fmt.Errorf("settle operation: %w", err)
			}
			if n == 0 { // settled already, by someone else's word
				return s.readInto(ctx, r, op.paymentID, &p)
			}
			resolved = true
			if op.operation == OpCreate {
				return s.applyCreate(ctx, r, op, out, now, &p)
			}
			if refund, err = s.applyChange(ctx, r, op, out, now, &p); err != nil {
				return err
			}
			attempt.outcome, attempt.transport, attempt.found, err = settleAttempt(ctx, r, op, out)
			return err
		})
	})
	if err != nil {
		return Payment{}, nil, false, err
	}
	if resolved {
		wasUnknown := op.state == opUnknown || op.state == opPending
		s.onSettled(op.operation, wasUnknown)
		switch {
		case out.code == DeclineNotCreated && out.opState == opDeclined:
			s.notCreatedLog(op)
		case wasUnknown:
			s.settledByRecovery(op, out.opState, out.status)
		}
	}
	if attempt.found {
		s.onAttempt(op.operation, attempt.outcome, attempt.transport)
	}
	return p, refund, resolved, nil
}

// insertCall writes one call of op under its key (kind WRITE or READ),
// made at now, that came to out: every call row is written here.
func insertCall(ctx context.Context, r sqlq.Runner, op operationRow, kind string, out outcome, now time.Time, took time.Duration) error {
	if _, err := r.Exec(ctx, commonSQL.SQL("insert_call"), op.id, op.paymentID, string(op.operation), op.key, kind,
		string(out.call), nullable.String(out.code), now, took.Milliseconds(), nullable.String(out.found)); err != nil {
		return fmt.Errorf("record processor call: %w", err)
	}
	return nil
}

// applyCreate sets a created payment to its processor's answer and writes
// its event (PAYMENT_CREATED, _DECLINED or _PENDING).
func (s *Service) applyCreate(ctx context.Context, r sqlq.Runner, op operationRow, out outcome, now time.Time, p *Payment) error {
	var decline *string
	if out.status == StatusDeclined {
		decline = nullable.String(out.code)
	}
	var na struct {
		typ, pix, boleto, url *string
		expires               *time.Time
	}
	if a := out.nextAction; a != nil && out.status == StatusPending {
		na.typ, na.pix, na.boleto, na.url = nullable.String(string(a.Type)), nullable.String(a.PixCode), nullable.String(a.BoletoLine), nullable.String(a.HostedURL)
		expires := a.ExpiresAt.UTC()
		na.expires = &expires
	}
	got, err := scanPayment(r.QueryRow(ctx, commonSQL.SQL("settle_created"), op.paymentID, string(out.status),
		nullable.String(out.reference), decline, now, na.typ, na.pix, na.boleto, na.url, na.expires))
	if err != nil {
		return fmt.Errorf("settle payment %s: %w", op.paymentID, err)
	}
	*p = got
	if s.settledPastPending(got.Method, got.Status) {
		return s.paidBeforeKnown(ctx, r, got, now)
	}
	typ := EventCreated
	switch out.status {
	case StatusDeclined:
		typ = EventDeclined
	case StatusPending:
		typ = EventPending
	}
	return insertEvent(ctx, r, typ, got.IdempotencyKey, got, nil, now)
}

// settledPastPending says whether a create's answer, status, finds a Pix
// or boleto that is paid later already paid or expired: paidBeforeKnown
// then tells the story a client follows from PENDING.
func (s *Service) settledPastPending(method Method, status Status) bool {
	return method.async() && s.paysLater() && (status == StatusCaptured || status == StatusExpired)
}

// paidBeforeKnown records a Pix or boleto whose create's answer CMPay
// learned only once the payer had paid (or it had expired): the story a
// client follows is the same as when the answer came in time, PENDING
// then CAPTURED with paidAt (or EXPIRED with expiredAt), each with its
// event.
func (s *Service) paidBeforeKnown(ctx context.Context, r sqlq.Runner, got Payment, now time.Time) error {
	if _, err := r.Exec(ctx, commonSQL.SQL("mark_paid_later"), got.ID, now); err != nil {
		return fmt.Errorf("settle payment %s: %w", got.ID, err)
	}
	pending := got
	pending.Status, pending.Captured.Minor, pending.CapturedAt = StatusPending, 0, time.Time{}
	if err := insertEvent(ctx, r, EventPending, got.IdempotencyKey, pending, nil, now); err != nil {
		return err
	}
	typ := EventCaptured
	if got.Status == StatusExpired {
		typ = EventExpired
	}
	return insertEvent(ctx, r, typ, got.IdempotencyKey, got, nil, now)
}

func (s *Service) readInto(ctx context.Context, r sqlq.Runner, id string, p *Payment) error {
	got, ok, err := readPayment(ctx, r, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("payment %s of a processor operation is missing", id)
	}
	*p = got
	return nil
}
