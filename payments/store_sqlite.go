package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// sqliteStore runs each batch as one write transaction (BEGIN IMMEDIATE:
// SQLite has one writer at a time) carrying every request queued
// meanwhile, so that a commit, and the fsync behind it, serves many
// requests. Inside the transaction nothing else writes, so each request
// runs as plain steps, one statement of sql/sqlite.sql at a time (each
// prepared once: sqlq.Lite), and is settled there: a held key is judged by
// settleHeld, as the engine judges PostgreSQL's, in the same transaction,
// and no answer needs a second look.
type sqliteStore struct {
	lite   *sqlq.Lite
	keyTTL time.Duration
	now    func() time.Time
}

func (st *sqliteStore) createBatch(ctx context.Context, jobs []*job) error {
	return st.batch(ctx, jobs, st.create)
}

func (st *sqliteStore) changeBatch(ctx context.Context, jobs []*job) error {
	return st.batch(ctx, jobs, st.change)
}

// batch runs each job's steps in one transaction and answers the jobs once
// it has committed.
func (st *sqliteStore) batch(ctx context.Context, jobs []*job, run func(context.Context, liteTx, *command, time.Time) (answer, error)) error {
	answers, err := st.inTx(ctx, len(jobs), func(tx liteTx, i int, now time.Time) (answer, error) {
		return run(ctx, tx, jobs[i].cmd, now)
	})
	if err != nil {
		return err
	}
	for i, j := range jobs {
		j.answer <- answers[i]
	}
	return nil
}

// inTx runs step for each of n requests in one write transaction, at one
// time read once the transaction holds SQLite's write lock, and returns
// their answers once it has committed.
func (st *sqliteStore) inTx(ctx context.Context, n int, step func(tx liteTx, i int, now time.Time) (answer, error)) ([]answer, error) {
	answers := make([]answer, n)
	err := st.lite.Tx(ctx, func(r sqlq.Runner) error {
		now := st.now()
		for i := range answers {
			a, err := step(liteTx{r}, i, now)
			if err != nil {
				return err
			}
			answers[i] = a
		}
		return nil
	})
	return answers, err
}

// create claims the key and creates the payment, or settles the request
// with the key it finds.
func (st *sqliteStore) create(ctx context.Context, tx liteTx, cmd *command, now time.Time) (answer, error) {
	for range maxRounds {
		claimed, err := tx.claimKey(ctx, cmd, cmd.clientID, cmd.newID, now)
		if err != nil {
			return answer{}, err
		}
		if claimed {
			p := createdPayment(cmd, now)
			if err := tx.insertPayment(ctx, p, !cmd.planned().storesOperation()); err != nil {
				return answer{}, err
			}
			if err := tx.insertAttempt(ctx, cmd, attemptRow{paymentID: p.ID, outcome: OutcomeCreated, at: now}); err != nil {
				return answer{}, err
			}
			if err := tx.insertOperation(ctx, cmd, now); err != nil {
				return answer{}, err
			}
			if typ, ok := createdEvent(p.Status); ok {
				if err := insertEvent(ctx, tx.r, typ, cmd.key, p, nil, now); err != nil {
					return answer{}, err
				}
			}
			return answer{kind: answerSettled, outcome: OutcomeCreated, payment: p}, nil
		}
		a, err := tx.settleHeld(ctx, cmd, cmd.clientID, now, st.keyTTL)
		if err != nil || a.kind != answerRetry {
			return a, err
		}
	}
	return answer{}, errRoundsExhausted
}

// change applies a capture, cancel or refund, or settles the request with
// the key it finds or the rule that refuses it.
func (st *sqliteStore) change(ctx context.Context, tx liteTx, cmd *command, now time.Time) (answer, error) {
	p, ok, err := tx.readPayment(ctx, cmd.paymentID)
	if err != nil {
		return answer{}, err
	}
	if !ok {
		return answer{kind: answerNotFound}, nil
	}
	if !foreseen(p) {
		return answer{kind: answerNotForeseen}, nil // as change_batch's snap
	}
	amount, stop := stopped(cmd, p)
	if stop != nil {
		return *stop, nil // nothing written
	}
	a, err := tx.settleHeld(ctx, cmd, p.ClientID, now, st.keyTTL)
	if err != nil || a.kind != answerRetry {
		return a, err
	}
	changed, applied, err := tx.applyChange(ctx, cmd, amount, now)
	if err != nil {
		return answer{}, err
	}
	if !applied {
		refused := refusal(cmd, p, amount)
		if refused == nil {
			// Nothing else writes inside this transaction: the rules in Go
			// and in apply_change disagree, which is a bug.
			return answer{}, fmt.Errorf("%s of %s was not applied, yet no rule refuses it", cmd.op, p.ID)
		}
		return tx.recordAttempt(ctx, record{cmd: cmd, outcome: OutcomeRefused, paymentID: p.ID, refused: refused, now: now})
	}
	if _, err := tx.claimKey(ctx, cmd, p.ClientID, p.ID, now); err != nil {
		return answer{}, err
	}
	a = answer{kind: answerSettled, outcome: OutcomeApplied, payment: changed}
	// The attempt names the operation of the change's one call, which the
	// sandbox answered before this transaction: processor_calls_of reads
	// the call from it, as change_batch's applied_attempt.
	row := attemptRow{paymentID: p.ID, outcome: OutcomeApplied, at: now, requestID: &cmd.opID}
	if cmd.op == OpRefund {
		if a.refund, err = tx.insertRefund(ctx, cmd, p, amount, now); err != nil {
			return answer{}, err
		}
		row.refundID = &a.refund.ID
	}
	if err := insertEvent(ctx, tx.r, eventTypeOf(cmd.op), cmd.key, changed, a.refund, now); err != nil {
		return answer{}, err
	}
	return a, tx.insertAttempt(ctx, cmd, row)
}

// liteTx is the steps of one request inside a batch's transaction r, and
// the settler that settleHeld records a verdict with there.
type liteTx struct{ r sqlq.Runner }

// settleHeld settles a request whose key the client holds (settleHeld in
// engine.go): answered retry when there is no key, or it was forgotten
// past its TTL, for the request to go on as new.
func (tx liteTx) settleHeld(ctx context.Context, cmd *command, clientID string, now time.Time, keyTTL time.Duration) (answer, error) {
	held, err := scanHeld(tx.r.QueryRow(ctx, commonSQL.SQL("read_key"), clientID, cmd.key))
	if errors.Is(err, sqlq.ErrNoRows) {
		return answer{kind: answerRetry}, nil
	}
	if err != nil {
		return answer{}, fmt.Errorf("read key: %w", err)
	}
	return settleHeld(ctx, tx, cmd, held, now, keyTTL)
}

func (tx liteTx) readPayment(ctx context.Context, id string) (Payment, bool, error) {
	return readPayment(ctx, tx.r, id)
}

func (tx liteTx) readRefund(ctx context.Context, id string, p Payment) (*Refund, error) {
	return readRefund(ctx, tx.r, id, p)
}

func (tx liteTx) forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error {
	return forgetKey(ctx, tx.r, id, expiredBefore)
}

// recordAttempt counts a replay or rejection on its payment (or reads a
// refused request's), then writes the attempt: inside the transaction, a
// missing payment fails the request before anything is kept. A request
// sent before whose attempt is there already is answered with its payment
// as it is, and nothing is written.
func (tx liteTx) recordAttempt(ctx context.Context, rec record) (answer, error) {
	at, heldParams, refusal, refundID, err := rec.attempt()
	if err != nil {
		return answer{}, err
	}
	recorded, err := tx.recorded(ctx, rec)
	if err != nil {
		return answer{}, err
	}
	var p Payment
	switch {
	case !recorded && rec.outcome == OutcomeReplayed:
		p, err = scanPayment(tx.r.QueryRow(ctx, commonSQL.SQL("count_replay"), at, rec.paymentID))
	case !recorded && rec.outcome == OutcomeRejected:
		p, err = scanPayment(tx.r.QueryRow(ctx, commonSQL.SQL("count_rejection"), at, rec.paymentID))
	default:
		p, err = scanPayment(tx.r.QueryRow(ctx, commonSQL.SQL("read_payment"), rec.paymentID))
	}
	if errors.Is(err, sqlq.ErrNoRows) {
		return answer{}, errPaymentMissing
	}
	if err != nil {
		return answer{}, fmt.Errorf("count attempt: %w", err)
	}
	row := attemptRow{paymentID: rec.paymentID, outcome: rec.outcome, at: at, heldParams: heldParams, refusal: refusal, refundID: refundID}
	if !recorded {
		if err := tx.insertAttempt(ctx, rec.cmd, row); err != nil {
			return answer{}, err
		}
	}
	var refund *Refund
	if refundID != nil {
		if refund, err = readRefund(ctx, tx.r, *refundID, p); err != nil {
			return answer{}, err
		}
	}
	return rec.answer(p, refund), nil
}

// claimKey inserts cmd's key for the client unless the client holds it
// already, and reports whether it did.
func (tx liteTx) claimKey(ctx context.Context, cmd *command, clientID, paymentID string, now time.Time) (bool, error) {
	var refundID, opID *string
	if cmd.op == OpRefund {
		refundID = &cmd.newID
	}
	if cmd.op != OpCreate {
		opID = &cmd.opID
	}
	n, err := tx.r.Exec(ctx, commonSQL.SQL("claim_key"),
		clientID, cmd.key, string(cmd.op), cmd.fp, fingerprintVersion, cmd.encoded, paymentID, refundID, now, opID)
	if err != nil {
		return false, fmt.Errorf("claim key: %w", err)
	}
	return n == 1, nil
}

// insertPayment creates p, the payment a create claimed its key for;
// foreseen marks it models.Payment.CreateForeseen.
func (tx liteTx) insertPayment(ctx context.Context, p Payment, foreseen bool) error {
	_, err := tx.r.Exec(ctx, sqliteSQL.SQL("insert_payment"),
		p.ID, p.ClientID, p.IdempotencyKey, p.Amount.Minor, p.Amount.Currency, string(p.Method),
		p.CreatedAt, string(p.Status), p.Captured.Minor, nullable.Time(p.CapturedAt),
		p.Processor, nullable.String(p.ProcessorReference), nullable.String(p.DeclineCode), nullable.String(p.PaymentMethodToken), foreseen)
	if err != nil {
		return fmt.Errorf("insert payment: %w", err)
	}
	return nil
}

// insertRefund creates the refund an applied refund request made.
func (tx liteTx) insertRefund(ctx context.Context, cmd *command, p Payment, amount int64, now time.Time) (*Refund, error) {
	r := Refund{ID: cmd.newID, PaymentID: p.ID, Amount: Money{Minor: amount, Currency: p.Amount.Currency},
		Reason: cmd.reason, IdempotencyKey: cmd.key, CreatedAt: now, Status: RefundSucceeded}
	_, err := tx.r.Exec(ctx, sqliteSQL.SQL("insert_refund"), r.ID, r.PaymentID, amount, r.Reason, r.IdempotencyKey, now)
	if err != nil {
		return nil, fmt.Errorf("insert refund: %w", err)
	}
	return &r, nil
}

// attemptRow is the row a request records on a payment.
type attemptRow struct {
	paymentID  string
	outcome    Outcome
	at         time.Time
	heldParams *string
	refusal    string
	refundID   *string
	// requestID, when set, is what the attempt names as its request: the
	// processor operation a change asked at a processor started.
	requestID *string
}

// recorded says whether rec's request was sent before and its attempt is
// there already.
func (tx liteTx) recorded(ctx context.Context, rec record) (bool, error) {
	if !rec.cmd.sentBefore {
		return false, nil
	}
	var n int64
	if err := tx.r.QueryRow(ctx, commonSQL.SQL("recorded_attempt"), rec.paymentID, rec.cmd.requestID()).Scan(&n); err != nil {
		return false, fmt.Errorf("look for the attempt: %w", err)
	}
	return n > 0, nil
}

// insertAttempt records cmd's attempt; a replay, rejection or refusal names
// its request, as does a change that names its operation (a.requestID).
func (tx liteTx) insertAttempt(ctx context.Context, cmd *command, a attemptRow) error {
	requestID := a.requestID
	if a.outcome != OutcomeCreated && a.outcome != OutcomeApplied {
		id := cmd.requestID()
		requestID = &id
	}
	_, err := tx.r.Exec(ctx, commonSQL.SQL("insert_attempt"),
		a.paymentID, string(cmd.op), cmd.key, string(a.outcome), a.at, cmd.encoded, a.heldParams, a.refusal,
		a.refundID, cmd.Transport, cmd.Actor, cmd.Address, requestID)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// applyChange runs the conditional update (apply_change); applied is
// false when the rules refused it.
func (tx liteTx) applyChange(ctx context.Context, cmd *command, amount int64, now time.Time) (Payment, bool, error) {
	p, err := scanPayment(tx.r.QueryRow(ctx, applyOneChangeSQL, string(cmd.op), cmd.paymentID, amount, cmd.change == nil, now))
	if errors.Is(err, sqlq.ErrNoRows) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, fmt.Errorf("apply %s: %w", cmd.op, err)
	}
	return p, true, nil
}

// applyOneChangeSQL is apply_one_change with apply_change in it.
var applyOneChangeSQL = expand(sqliteSQL, sqliteSQL.SQL("apply_one_change"))

// The store's own methods run on the pool. The engine calls readPayment,
// forgetKey and recordBatch only for what a PostgreSQL statement leaves
// open, which SQLite's batches never do, but they keep the seam whole and
// the shared tests run them.

func (st *sqliteStore) readPayment(ctx context.Context, id string) (Payment, bool, error) {
	return readPayment(ctx, st.lite, id)
}

func (st *sqliteStore) forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error {
	return forgetKey(ctx, st.lite, id, expiredBefore)
}

// recordBatch records every job's attempt in one transaction, and answers
// the jobs once it has committed. A job whose payment is missing fails
// alone: nothing of it was written.
func (st *sqliteStore) recordBatch(ctx context.Context, jobs []*recordJob) error {
	answers, err := st.inTx(ctx, len(jobs), func(tx liteTx, i int, _ time.Time) (answer, error) {
		a, err := tx.recordAttempt(ctx, jobs[i].rec)
		if errors.Is(err, errPaymentMissing) {
			return answer{err: err}, nil
		}
		return a, err
	})
	if err != nil {
		return err
	}
	for i, j := range jobs {
		j.answer <- answers[i]
	}
	return nil
}

func (st *sqliteStore) runnerOn(db *gorm.DB) (sqlq.Runner, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if sqlDB == st.lite.DB() {
		return st.lite, nil
	}
	return sqlq.NewLite(sqlDB), nil
}

// listPayments binds the page's parameters by name, which SQLite does
// itself.
func (st *sqliteStore) listPayments(ctx context.Context, r sqlq.Runner, q pageQuery) ([]Payment, error) {
	args := make([]any, 0, len(q.args))
	for name, v := range q.args {
		args = append(args, sql.Named(name, v))
	}
	return sqlq.Collect(ctx, r, q.sql, args, scanPayment)
}

// attemptsOf and refundsOf pass the ids as a JSON array: SQLite has no
// arrays.
func (st *sqliteStore) attemptsOf(ctx context.Context, ids []string) ([]models.IdempotencyAttempt, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(ctx, st.lite, sqlitePage.attempts, []any{string(list)}, scanAttempt)
}

func (st *sqliteStore) refundsOf(ctx context.Context, ids []string) ([]models.Refund, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(ctx, st.lite, sqlitePage.refunds, []any{string(list)}, scanRefundRow)
}

func (st *sqliteStore) attemptCounts(ctx context.Context, r sqlq.Runner, from time.Time) ([]hourCount, error) {
	return sqlq.Collect(ctx, r, sqliteSQL.SQL("attempt_counts"), []any{from}, scanHourCount)
}

func (st *sqliteStore) sweepKeys(ctx context.Context, before time.Time, limit int) (int64, error) {
	return st.lite.Exec(ctx, sqliteSweep, before, limit)
}

var _ store = (*sqliteStore)(nil)

func (st *sqliteStore) processorCallsOf(ctx context.Context, ids []string) ([]models.ProcessorCall, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(ctx, st.lite, sqlitePage.calls, []any{string(list)}, scanProcessorCall)
}

func (st *sqliteStore) asyncStatesOf(ctx context.Context, ids []string) ([]asyncRow, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return sqlq.Collect(ctx, st.lite, sqlitePage.async, []any{string(list)}, scanAsyncState)
}

func (st *sqliteStore) db() sqlq.DB { return st.lite }

// claimDue leases due operations in one statement: SQLite's single writer
// runs it whole before any other instance's.
func (st *sqliteStore) claimDue(ctx context.Context, owner string, until, now time.Time, limit int, processors [2]string) ([]string, error) {
	return sqlq.Collect(ctx, st.lite, sqliteSQL.SQL("claim_due"), []any{owner, until, now, limit, processors[0], processors[1]}, scanID)
}

func (st *sqliteStore) claimAuthorizations(ctx context.Context, lease, due time.Time, processor string, limit int) ([]string, error) {
	return sqlq.Collect(ctx, st.lite, sqliteSQL.SQL("claim_authorizations"), []any{lease, due, processor, limit}, scanID)
}

// insertOperation stores a create's processor operation, leased to the
// request that asks next, if it has one (createPlan.storesOperation): what
// create_batch's "operation" writes on PostgreSQL.
func (tx liteTx) insertOperation(ctx context.Context, cmd *command, now time.Time) error {
	pl := cmd.planned()
	if !pl.storesOperation() {
		return nil // the payment says it all (models.Payment.CreateForeseen)
	}
	pl.leasedAt = now
	_, err := tx.r.Exec(ctx, commonSQL.SQL("insert_operation"), pl.opID, cmd.newID, nil, string(OpCreate), pl.processor,
		cmd.amount.Minor, cmd.amount.Currency, pl.request, pl.opState, nil, 0, pl.lease.owner, now.Add(pl.lease.hold),
		now.Add(pl.lease.due), now, nil)
	if err != nil {
		return fmt.Errorf("store processor operation: %w", err)
	}
	return nil
}

func (st *sqliteStore) lockPaymentSQL() string { return sqliteSQL.SQL("lock_payment") }
