package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// sqliteStore runs each batch as one write transaction (BEGIN IMMEDIATE:
// SQLite has one writer at a time) carrying every request queued
// meanwhile, so that a commit, and the fsync behind it, serves many
// requests. Inside the transaction nothing else writes, so each request
// runs as plain steps (steps.go) and is settled there: the engine's
// verdicts (decide.go) are taken in the same transaction, and no answer
// needs a second look.
type sqliteStore struct {
	db       *gorm.DB
	prepared *preparedStatements
	keyTTL   time.Duration
	now      func() time.Time
}

func (st *sqliteStore) createBatch(ctx context.Context, jobs []*job) error {
	return st.batch(ctx, jobs, st.create)
}

func (st *sqliteStore) changeBatch(ctx context.Context, jobs []*job) error {
	return st.batch(ctx, jobs, st.change)
}

// batch runs each job's steps in one transaction and answers the jobs once
// it has committed.
func (st *sqliteStore) batch(ctx context.Context, jobs []*job, run func(*gorm.DB, *command, time.Time) (answer, error)) error {
	answers := make([]answer, len(jobs))
	err := st.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		tx = tx.Set(preparedKey, st.prepared)
		now := st.now()
		for i, j := range jobs {
			a, err := run(tx, j.cmd, now)
			if err != nil {
				return err
			}
			answers[i] = a
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, j := range jobs {
		j.answer <- answers[i]
	}
	st.prepared.prepareWanted(ctx)
	return nil
}

// create claims the key and creates the payment, or settles the request
// with the key it finds.
func (st *sqliteStore) create(tx *gorm.DB, cmd *command, now time.Time) (answer, error) {
	for range maxRounds {
		claimed, err := claimKey(tx, cmd, cmd.clientID, cmd.newID, now)
		if err != nil {
			return answer{}, err
		}
		if claimed {
			p, err := insertPayment(tx, cmd, now)
			if err != nil {
				return answer{}, err
			}
			if err := insertAttempt(tx, cmd, attempt{paymentID: p.ID, outcome: OutcomeCreated}, now); err != nil {
				return answer{}, err
			}
			if err := insertEvent(tx, cmd, p, nil, now); err != nil {
				return answer{}, err
			}
			return answer{kind: answerSettled, outcome: OutcomeCreated, payment: p}, nil
		}
		a, again, err := st.settleHeld(tx, cmd, cmd.clientID, now)
		if err != nil || !again {
			return a, err
		}
	}
	return answer{}, errRoundsExhausted
}

// change applies a capture, cancel or refund, or settles the request with
// the key it finds or the rule that refuses it.
func (st *sqliteStore) change(tx *gorm.DB, cmd *command, now time.Time) (answer, error) {
	p, ok, err := readPayment(tx, cmd.paymentID)
	if err != nil {
		return answer{}, err
	}
	if !ok {
		return answer{kind: answerNotFound}, nil
	}
	amount, stop := stopped(cmd, p)
	if stop != nil {
		return *stop, nil // nothing written
	}
	a, again, err := st.settleHeld(tx, cmd, p.ClientID, now)
	if err != nil || !again {
		return a, err
	}
	changed, applied, err := st.applyChange(tx, cmd, amount, now)
	if err != nil {
		return answer{}, err
	}
	if !applied {
		refused := refusal(cmd, p, amount)
		if refused == nil {
			// Nothing else writes inside this transaction: the rules in Go
			// and in apply_change.sql disagree, which is a bug.
			return answer{}, fmt.Errorf("%s of %s was not applied, yet no rule refuses it", cmd.op, p.ID)
		}
		return recordAttempt(tx, cmd, OutcomeRefused, p.ID, nil, refused, now)
	}
	if _, err := claimKey(tx, cmd, p.ClientID, p.ID, now); err != nil {
		return answer{}, err
	}
	a = answer{kind: answerSettled, outcome: OutcomeApplied, payment: changed}
	row := attempt{paymentID: p.ID, outcome: OutcomeApplied}
	if cmd.op == OpRefund {
		if a.refund, err = insertRefund(tx, cmd, p, amount, now); err != nil {
			return answer{}, err
		}
		row.refundID = &a.refund.ID
	}
	if err := insertEvent(tx, cmd, changed, a.refund, now); err != nil {
		return answer{}, err
	}
	return a, insertAttempt(tx, cmd, row, now)
}

// settleHeld settles a request whose key the client holds: a replay or a
// rejection, recorded. again is true when there was no key to settle with
// (or an expired one, now forgotten): the request goes on as new.
func (st *sqliteStore) settleHeld(tx *gorm.DB, cmd *command, clientID string, now time.Time) (a answer, again bool, err error) {
	held, p, err := readHeld(tx, clientID, cmd.key)
	if err != nil || held == nil {
		return answer{}, held == nil, err
	}
	expiredBefore := now.Add(-st.keyTTL)
	v, err := decide(*held, cmd, expiredBefore)
	if err != nil {
		return answer{}, false, err
	}
	switch v {
	case verdictForget:
		return answer{}, true, forgetKey(tx, held.id, expiredBefore)
	case verdictReplay:
		a, err = recordAttempt(tx, cmd, OutcomeReplayed, p.ID, held, nil, now)
	default:
		a, err = recordAttempt(tx, cmd, OutcomeRejected, p.ID, held, nil, now)
	}
	return a, false, err
}

// applyChangeSQL runs sql/apply_change.sql for one request.
var applyChangeSQL = `WITH target AS (SELECT $1 AS req_operation, $2 AS req_payment_id, $3 AS req_amount, $4 AS req_all,
	1 AS req_ready, $5 AS req_now) ` + statement("apply_change")

// applyChange runs the conditional update; applied is false when the rules
// refused it.
func (st *sqliteStore) applyChange(tx *gorm.DB, cmd *command, amount int64, now time.Time) (Payment, bool, error) {
	p, err := scanPayment(connOf(tx).queryRow(applyChangeSQL, string(cmd.op), cmd.paymentID, amount, cmd.change == nil, now).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, fmt.Errorf("apply %s: %w", cmd.op, err)
	}
	return p, true, nil
}

func (st *sqliteStore) attemptCounts(db *gorm.DB, from time.Time) ([]hourCount, error) {
	var rows []hourCount
	err := db.Raw(`SELECT CAST(strftime('%s', substr(at, 1, 19)) AS INTEGER) / 3600 AS hour, outcome, COUNT(*) AS n
		FROM idempotency_attempts WHERE at >= ? GROUP BY 1, 2`, from).Scan(&rows).Error
	return rows, err
}

// sweepKeys needs no row locks: SQLite has one writer at a time.
func (st *sqliteStore) sweepKeys(ctx context.Context, before time.Time, limit int) (int64, error) {
	res := st.db.WithContext(ctx).Exec(`DELETE FROM idempotency_keys WHERE id IN
		(SELECT id FROM idempotency_keys WHERE created_at < ? LIMIT ?)`, before, limit)
	return res.RowsAffected, res.Error
}

var _ store = (*sqliteStore)(nil)
