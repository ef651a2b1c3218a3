package payments

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// postgresStore runs each batch as one statement (sql/create_batch.sql,
// sql/change_batch.sql): data-modifying CTEs that claim the keys, apply
// what they may and settle replays (and, for creates, the rejection of
// another create's key), in one round trip and one commit for the whole
// batch. What the statement leaves open (any other held key, a change the
// snapshot allowed but the row lock did not) comes back to the engine,
// which decides it (decide.go) and records it with one statement more
// (record_batch, for a batch of such requests at once).
type postgresStore struct {
	pg *sqlq.PG
	// keyTTL and now give each statement its expired-before.
	keyTTL time.Duration
	now    func() time.Time
}

// PostgreSQL's SQLSTATEs for a duplicate key, and for a statement chosen
// to end a deadlock.
const (
	uniqueViolation  = "23505"
	deadlockDetected = "40P01"
)

// isDeadlock says whether err is PostgreSQL ending a transaction to break
// a deadlock: the transaction wrote nothing, and may be run again.
func isDeadlock(err error) bool {
	code, ok := sqlq.PGCode(err)
	return ok && code == deadlockDetected
}

func (st *postgresStore) createBatch(ctx context.Context, jobs []*job) error {
	n := len(jobs)
	clientIDs, keys, params, ids := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	currencies, methods := make([]string, n), make([]string, n)
	transports, actors, addresses := make([]string, n), make([]string, n), make([]string, n)
	fps, amounts, captures := make([][]byte, n), make([]int64, n), make([]bool, n)
	for i, j := range jobs {
		c := j.cmd
		clientIDs[i], keys[i], fps[i], params[i], ids[i] = c.clientID, c.key, c.fp, c.encoded, c.newID
		amounts[i], currencies[i], methods[i], captures[i] = c.amount.Minor, c.amount.Currency, string(c.method), c.capture
		transports[i], actors[i], addresses[i] = c.Transport, c.Actor, c.Address
	}
	statuses, refs, codes, tokens := make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	opIDs, opStates, opRequests, sentBefore := make([]string, n), make([]string, n), make([]string, n), make([]bool, n)
	var procName string
	var lease leaseTerms
	for i, j := range jobs {
		pl := j.cmd.planned()
		statuses[i], refs[i], codes[i] = string(pl.status), pl.reference, pl.declineCode
		if j.cmd.token != "" {
			tokens[i] = &j.cmd.token
		}
		opIDs[i], opStates[i], opRequests[i], sentBefore[i] = pl.opID, pl.opState, pl.request, j.cmd.sentBefore
		procName, lease = pl.processor, pl.lease
	}
	now := st.now()
	for _, j := range jobs {
		j.cmd.planned().leasedAt = now
	}
	return st.run(ctx, jobs, now, CreateBatchSQL, false, clientIDs, keys, fps, params, ids, amounts, currencies, methods, captures,
		transports, actors, addresses, fingerprintVersion, now, now.Add(-st.keyTTL),
		statuses, procName, refs, codes, tokens, opIDs, opStates, opRequests, lease.owner, now.Add(lease.hold), now.Add(lease.due),
		sentBefore)
}

func (st *postgresStore) changeBatch(ctx context.Context, jobs []*job) error {
	n := len(jobs)
	width := int(maxCurrencyDigits) + 1
	ops, paymentIDs, keys, params := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	reasons, refundIDs := make([]*string, n), make([]string, n)
	transports, actors, addresses, scopes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	fps, given, minors := make([][]byte, n), make([]bool, n), make([]*int64, n*width)
	opIDs, sentBefore := make([]string, n), make([]bool, n)
	for i, j := range jobs {
		c := j.cmd
		opIDs[i], sentBefore[i] = c.opID, c.sentBefore
		ops[i], paymentIDs[i], keys[i], fps[i], params[i] = string(c.op), c.paymentID, c.key, c.fp, c.encoded
		reasons[i], refundIDs[i] = c.reason, c.newID
		transports[i], actors[i], addresses[i], scopes[i] = c.Transport, c.Actor, c.Address, c.Client
		if c.change != nil {
			given[i] = true
			copy(minors[i*width:], c.change.byDigits)
		}
	}
	now := st.now()
	return st.run(ctx, jobs, now, ChangeBatchSQL, true, ops, paymentIDs, keys, fps, params, given, reasons, refundIDs,
		transports, actors, addresses, scopes, minors, width, fingerprintVersion, now, now.Add(-st.keyTTL), opIDs, sentBefore)
}

// run executes a batch statement, whose time is now and whose rows carry
// refund columns if refunds, and answers every job once it has committed.
// A job the statement returns no row for lost a race (its key was taken by
// a transaction newer than the statement's snapshot): it is answered
// RETRY. On error no job is answered.
func (st *postgresStore) run(ctx context.Context, jobs []*job, now time.Time, query string, refunds bool, args ...any) error {
	answers := make([]answer, len(jobs))
	answered := make([]bool, len(jobs))
	// The rows are pgx's, scanned straight into pgtype's values, past
	// database/sql, whose per-column conversions showed in the profile of
	// every batch. One row value and its scan targets serve every row: a
	// scan sets every field (NULL included) and copies what it keeps
	// (strings, bytes), so nothing of one row's answer is overwritten by
	// the next. Query returns once the statement has ended, its commit
	// included: the statement is its own transaction.
	var r resultRow
	targets := r.targets(refunds)
	err := st.pg.Query(ctx, query, args, func(row sqlq.Row) error {
		if err := row.Scan(targets...); err != nil {
			return err
		}
		i := int(r.n) - 1
		if i < 0 || i >= len(jobs) || answered[i] {
			return fmt.Errorf("unexpected row for request %d of %d", r.n, len(jobs))
		}
		a, err := r.answer(jobs[i].cmd, now)
		if err != nil {
			return err
		}
		answers[i], answered[i] = a, true
		return nil
	})
	if code, _ := sqlq.PGCode(err); (code == uniqueViolation || code == deadlockDetected) && len(jobs) == 1 {
		// A request with the same key committed after the statement's
		// snapshot was taken (change_batch, "claim"), or the statement
		// was chosen to end a deadlock with another instance's (their rows
		// are locked in no common order when one counts a replay on a
		// payment the other changes), and the whole statement rolled back:
		// look again. In a batch of several, the batcher first runs each
		// job alone, so that one request's race is never another's.
		answers[0], answered[0] = answer{kind: answerRetry}, true
		err = nil
	}
	if err != nil {
		return fmt.Errorf("batch statement: %w", err)
	}
	for i, j := range jobs {
		if !answered[i] {
			answers[i] = answer{kind: answerRetry}
		}
		j.answer <- answers[i]
	}
	return nil
}

// resultRow is one row a batch statement returns: the request's position,
// what happened to it, and the payment, refund and held key it concerns,
// any of them NULL where the answer has none (create_batch has no refund
// columns). Its fields are pgtype's nullable values, which pgx scans into
// without reflection: every request is answered with one of these rows.
// The held key is one JSON column (a HELD or REJECTED row's), decoded only
// for the few rows that carry one.
type resultRow struct {
	n       int64
	outcome string

	id, clientID, key, currency, method, status     pgtype.Text
	amount, captured, refunded, replays, rejections pgtype.Int8
	createdAt, capturedAt, canceledAt               pgtype.Timestamptz
	processor, reference, declineCode, pendingOp    pgtype.Text
	reserved                                        pgtype.Int8
	token                                           pgtype.Text

	refundID, refundPaymentID, refundReason, refundKey pgtype.Text
	refundAmount                                       pgtype.Int8
	refundCreatedAt                                    pgtype.Timestamptz

	held pgtype.Text
}

// targets are the fields in the order of the statements' columns:
// paymentColumns, refundColumns if refunds, the held key.
func (r *resultRow) targets(refunds bool) []any {
	return append(append([]any{&r.n, &r.outcome}, r.paymentTargets(refunds)...), &r.held)
}

// paymentTargets are the payment's fields, and the refund's if refunds,
// in the statements' column order.
func (r *resultRow) paymentTargets(refunds bool) []any {
	t := []any{&r.id, &r.clientID, &r.key, &r.amount, &r.currency, &r.method, &r.createdAt,
		&r.status, &r.captured, &r.refunded, &r.capturedAt, &r.canceledAt, &r.replays, &r.rejections,
		&r.processor, &r.reference, &r.declineCode, &r.pendingOp, &r.reserved, &r.token}
	if refunds {
		t = append(t, &r.refundID, &r.refundPaymentID, &r.refundAmount, &r.refundReason, &r.refundKey, &r.refundCreatedAt)
	}
	return t
}

// heldRow is the JSON of a held key in a HELD result row.
type heldRow struct {
	ID          int64     `json:"id"`
	Operation   string    `json:"operation"`
	Params      *string   `json:"params"`
	Fingerprint string    `json:"fingerprint"` // hex
	Version     int       `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	PaymentID   string    `json:"payment_id"`
	RefundID    *string   `json:"refund_id"`
	OperationID *string   `json:"operation_id"`
}

// heldKey decodes a HELD or REJECTED row's key. A version 1 key's params
// are nil: settleHeld rebuilds them from its payment.
func (r *resultRow) heldKey() (*heldKey, error) {
	if !r.held.Valid {
		return nil, fmt.Errorf("row %d (%s) names no key", r.n, r.outcome)
	}
	var h heldRow
	if err := json.Unmarshal([]byte(r.held.String), &h); err != nil {
		return nil, fmt.Errorf("row %d: held key: %w", r.n, err)
	}
	fp, err := hex.DecodeString(h.Fingerprint)
	if err != nil {
		return nil, fmt.Errorf("row %d: held key's fingerprint: %w", r.n, err)
	}
	params, err := decodeParams(h.Params)
	if err != nil {
		return nil, err
	}
	k := &heldKey{id: h.ID, operation: Operation(h.Operation), params: params, fp: fp, version: h.Version,
		createdAt: h.CreatedAt, paymentID: h.PaymentID}
	if h.RefundID != nil {
		k.refundID = *h.RefundID
	}
	if h.OperationID != nil {
		k.opID = *h.OperationID
	}
	return k, nil
}

// outcomes the statements return beside CREATED, APPLIED and REPLAYED.
const (
	rowHeld       = "HELD"
	rowNotApplied = "NOT_APPLIED"
	rowNotFound   = "NOT_FOUND"
)

// answer reads the row of cmd's request, in a statement whose time was now.
func (r *resultRow) answer(cmd *command, now time.Time) (answer, error) {
	switch r.outcome {
	case rowNotFound:
		return answer{kind: answerNotFound}, nil
	case string(OutcomeCreated):
		// The statement wrote the payment createdPayment makes, and sends
		// nothing of it back.
		if cmd.op != OpCreate {
			return answer{}, fmt.Errorf("row %d: %s for a %s", r.n, r.outcome, cmd.op)
		}
		return answer{kind: answerSettled, outcome: OutcomeCreated, payment: createdPayment(cmd, now)}, nil
	case rowHeld:
		// The engine judges the key, and reads its payment if it needs it.
		held, err := r.heldKey()
		if err != nil {
			return answer{}, err
		}
		return answer{kind: answerHeld, held: held}, nil
	case string(OutcomeApplied), string(OutcomeReplayed), rowNotApplied, string(OutcomeRejected):
	default:
		return answer{}, fmt.Errorf("row %d: unexpected outcome %s", r.n, r.outcome)
	}
	var held *heldKey
	if r.outcome == string(OutcomeRejected) {
		// create_batch rejected and recorded the reuse of a create's key;
		// the error names the fields that differ from the key's params.
		// The change statement leaves every rejection to the engine.
		if cmd.op != OpCreate {
			return answer{}, fmt.Errorf("row %d: %s for a %s", r.n, r.outcome, cmd.op)
		}
		var err error
		if held, err = r.heldKey(); err != nil {
			return answer{}, err
		}
	}
	if !r.id.Valid {
		return answer{}, fmt.Errorf("row %d (%s) names no payment", r.n, r.outcome)
	}
	a := answer{kind: answerSettled, outcome: Outcome(r.outcome), payment: r.payment(), refund: r.refund(), held: held}
	if r.outcome == rowNotApplied {
		a.kind = answerNotApplied
	}
	return a, nil
}

// refund is the row's refund, nil if it has none.
func (r *resultRow) refund() *Refund {
	if !r.refundID.Valid {
		return nil
	}
	return &Refund{ID: r.refundID.String, PaymentID: r.refundPaymentID.String,
		Amount: Money{Minor: r.refundAmount.Int64, Currency: r.currency.String},
		Reason: textPtr(r.refundReason), IdempotencyKey: r.refundKey.String, CreatedAt: r.refundCreatedAt.Time.UTC(),
		// The batch statements apply only foreseen refunds, which succeed
		// at once (operations.go).
		Status: RefundSucceeded}
}

func (r *resultRow) payment() Payment {
	money := func(minor pgtype.Int8) Money { return Money{Minor: minor.Int64, Currency: r.currency.String} }
	return Payment{
		ID: r.id.String, ClientID: r.clientID.String, IdempotencyKey: r.key.String, Amount: money(r.amount),
		Method: Method(r.method.String), CreatedAt: r.createdAt.Time.UTC(),
		Status: Status(r.status.String), Captured: money(r.captured), Refunded: money(r.refunded),
		CapturedAt: timeOrZero(r.capturedAt), CanceledAt: timeOrZero(r.canceledAt),
		ReplayCount: int(r.replays.Int64), RejectedCount: int(r.rejections.Int64),
		Processor: r.processor.String, ProcessorReference: r.reference.String,
		DeclineCode: r.declineCode.String, PendingOperation: Operation(r.pendingOp.String),
		Reserved: money(r.reserved), PaymentMethodToken: r.token.String,
	}
}

// textPtr is a nullable text as a pointer, nil for NULL.
func textPtr(t pgtype.Text) *string {
	if !t.Valid {
		return nil
	}
	return &t.String
}

// timeOrZero is a nullable time in UTC, the zero time for NULL.
func timeOrZero(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// recordBatch records a batch of attempts in one statement
// (sql/postgres.sql, record_batch) and answers every job once it has
// committed: a job with no row has no payment. A statement of one request
// that PostgreSQL ended to break a deadlock with a batch statement
// counting on the same payment wrote nothing: it is answered retry, and
// the engine sends its request again; in a batch of several, the batcher
// first runs each job alone.
func (st *postgresStore) recordBatch(ctx context.Context, jobs []*recordJob) error {
	n := len(jobs)
	paymentIDs, ops, keys, outcomes, params := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	heldParams, refundIDs := make([]*string, n), make([]*string, n)
	refusals, transports, actors, addresses := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ats, requestIDs, sentBefore := make([]time.Time, n), make([]string, n), make([]bool, n)
	for i, j := range jobs {
		at, held, refusal, refundID, err := j.rec.attempt()
		if err != nil {
			return err
		}
		c := j.rec.cmd
		paymentIDs[i], ops[i], keys[i], outcomes[i], ats[i], params[i] = j.rec.paymentID, string(c.op), c.key, string(j.rec.outcome), at, c.encoded
		heldParams[i], refusals[i], refundIDs[i] = held, refusal, refundID
		transports[i], actors[i], addresses[i] = c.Transport, c.Actor, c.Address
		requestIDs[i], sentBefore[i] = c.requestID(), c.sentBefore
	}
	answers := make([]*answer, n)
	var r resultRow
	targets := append([]any{&r.n}, r.paymentTargets(true)...)
	err := st.pg.Query(ctx, postgresSQL.SQL("record_batch"), []any{paymentIDs, ops, keys, outcomes, ats, params, heldParams,
		refusals, refundIDs, transports, actors, addresses, requestIDs, sentBefore}, func(row sqlq.Row) error {
		if err := row.Scan(targets...); err != nil {
			return err
		}
		i := int(r.n) - 1
		if i < 0 || i >= n || answers[i] != nil {
			return fmt.Errorf("unexpected row for record %d of %d", r.n, n)
		}
		a := jobs[i].rec.answer(r.payment(), r.refund())
		answers[i] = &a
		return nil
	})
	if isDeadlock(err) && n == 1 {
		answers[0], err = &answer{kind: answerRetry}, nil
	}
	if err != nil {
		return fmt.Errorf("record statement: %w", err)
	}
	for i, j := range jobs {
		if answers[i] == nil {
			answers[i] = &answer{err: errPaymentMissing}
		}
		j.answer <- *answers[i]
	}
	return nil
}

func (st *postgresStore) readPayment(ctx context.Context, id string) (Payment, bool, error) {
	return readPayment(ctx, st.pg, id)
}

func (st *postgresStore) forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error {
	return forgetKey(ctx, st.pg, id, expiredBefore)
}

func (st *postgresStore) runnerOn(db *gorm.DB) (sqlq.Runner, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	return sqlq.NewPG(sqlDB), nil
}

// listPayments plans each page for its own arguments
// (pgx.QueryExecModeExec): whether an index range is short depends on them,
// and a plan cached for one filter would serve another badly.
func (st *postgresStore) listPayments(ctx context.Context, r sqlq.Runner, q pageQuery) ([]Payment, error) {
	return sqlq.Collect(ctx, r, q.sql, []any{pgx.QueryExecModeExec, pgx.NamedArgs(q.args)}, scanPayment)
}

func (st *postgresStore) attemptsOf(ctx context.Context, ids []string) ([]models.IdempotencyAttempt, error) {
	return sqlq.Collect(ctx, st.pg, postgresPage.attempts, []any{ids}, scanAttempt)
}

func (st *postgresStore) refundsOf(ctx context.Context, ids []string) ([]models.Refund, error) {
	return sqlq.Collect(ctx, st.pg, postgresPage.refunds, []any{ids}, scanRefundRow)
}

func (st *postgresStore) attemptCounts(ctx context.Context, r sqlq.Runner, from time.Time) ([]hourCount, error) {
	return sqlq.Collect(ctx, r, postgresSQL.SQL("attempt_counts"), []any{from}, scanHourCount)
}

func (st *postgresStore) sweepKeys(ctx context.Context, before time.Time, limit int) (int64, error) {
	return st.pg.Exec(ctx, postgresSweep, before, limit)
}

var _ store = (*postgresStore)(nil)

func (st *postgresStore) processorCallsOf(ctx context.Context, ids []string) ([]models.ProcessorCall, error) {
	return sqlq.Collect(ctx, st.pg, postgresPage.calls, []any{ids}, scanProcessorCall)
}

func (st *postgresStore) asyncStatesOf(ctx context.Context, ids []string) ([]asyncRow, error) {
	return sqlq.Collect(ctx, st.pg, postgresPage.async, []any{ids}, scanAsyncState)
}

func (st *postgresStore) db() sqlq.DB { return st.pg }

// claimDue leases due operations with FOR UPDATE SKIP LOCKED: instances
// claiming at once each get others, and none waits for another.
func (st *postgresStore) claimDue(ctx context.Context, owner string, until, now time.Time, limit int, processors [2]string) ([]string, error) {
	return sqlq.Collect(ctx, st.pg, postgresSQL.SQL("claim_due"), []any{owner, until, now, limit, processors[0], processors[1]}, scanID)
}

// claimAuthorizations skips the payments others hold (SKIP LOCKED), as
// claimDue does.
func (st *postgresStore) claimAuthorizations(ctx context.Context, lease, due time.Time, processor string, limit int) ([]string, error) {
	return sqlq.Collect(ctx, st.pg, postgresSQL.SQL("claim_authorizations"), []any{lease, due, processor, limit}, scanID)
}

func (st *postgresStore) lockPaymentSQL() string { return postgresSQL.SQL("lock_payment") }
