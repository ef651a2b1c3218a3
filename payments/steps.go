package payments

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/cmpay/cmpay/models"
)

// The steps of an operation as single statements that run alike on both
// dialects. SQLite runs every request as these steps in one transaction
// (store_sqlite.go); PostgreSQL runs the common paths as one statement per
// batch (store_postgres.go) and only the rare ones here: recording a
// verdict the engine reached after the statement, forgetting an expired
// key.

// plausibleID reports whether id could be one this API issued. Anything
// else is NOT_FOUND without asking the database, which would refuse bytes
// that are not UTF-8 with an error rather than find nothing.
func plausibleID(id string) bool {
	return id != "" && len(id) <= 40 && utf8.ValidString(id)
}

// readPayment reads one payment; ok is false when no payment has the id.
func readPayment(tx *gorm.DB, id string) (p Payment, ok bool, err error) {
	if !plausibleID(id) {
		return Payment{}, false, nil
	}
	var row models.Payment
	res := tx.Raw(`SELECT `+paymentColumns+` FROM payments WHERE id = ?`, id).Scan(&row)
	if res.Error != nil {
		return Payment{}, false, fmt.Errorf("read payment: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return Payment{}, false, nil
	}
	return paymentFromRow(row), true, nil
}

// readRefund reads one refund of payment p.
func readRefund(tx *gorm.DB, id string, p Payment) (*Refund, error) {
	var row models.Refund
	res := tx.Raw(`SELECT `+refundColumns+` FROM refunds WHERE id = ?`, id).Scan(&row)
	if res.Error != nil {
		return nil, fmt.Errorf("read refund: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("refund %s of the key's payment %s is missing", id, p.ID)
	}
	r := refundFromRow(row, p.Amount.Currency)
	return &r, nil
}

// readHeld reads the key a client holds, if any, and the payment it
// belongs to.
func readHeld(tx *gorm.DB, clientID, key string) (*heldKey, Payment, error) {
	var row models.IdempotencyKey
	res := tx.Raw(`SELECT * FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ?`, clientID, key).Scan(&row)
	if res.Error != nil {
		return nil, Payment{}, fmt.Errorf("read key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, Payment{}, nil
	}
	p, ok, err := readPayment(tx, row.PaymentID)
	if err != nil {
		return nil, Payment{}, err
	}
	if !ok {
		return nil, Payment{}, fmt.Errorf("key %d names payment %s, which does not exist", row.ID, row.PaymentID)
	}
	held, err := heldFromRow(row, p)
	return held, p, err
}

// heldFromRow reads a key row; a version 1 key's parameters are rebuilt
// from the payment it created.
func heldFromRow(row models.IdempotencyKey, p Payment) (*heldKey, error) {
	params, err := decodeParams(row.Params)
	if err != nil {
		return nil, err
	}
	if params == nil {
		params = createParams(p.Amount, p.Method, true)
	}
	h := &heldKey{
		id: row.ID, operation: Operation(row.Operation), params: params,
		fp: row.Fingerprint, version: row.FingerprintVersion, createdAt: row.CreatedAt,
		paymentID: row.PaymentID,
	}
	if row.RefundID != nil {
		h.refundID = *row.RefundID
	}
	return h, nil
}

// keyRow is the key row a request claims.
func keyRow(cmd *command, clientID, paymentID string, now time.Time) models.IdempotencyKey {
	params := cmd.params.encode()
	k := models.IdempotencyKey{
		ClientID: clientID, Key: cmd.key, Operation: string(cmd.op),
		Fingerprint: cmd.fp, FingerprintVersion: fingerprintVersion, Params: &params,
		PaymentID: paymentID, CreatedAt: now,
	}
	if cmd.op == OpRefund {
		k.RefundID = &cmd.newID
	}
	return k
}

// claimKey inserts a key unless the client holds it already, and reports
// whether it did.
func claimKey(tx *gorm.DB, k models.IdempotencyKey) (bool, error) {
	res := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "client_id"}, {Name: "idempotency_key"}},
		DoNothing: true,
	}).Create(&k)
	if res.Error != nil {
		return false, fmt.Errorf("claim key: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// forgetKey deletes a key found past its TTL, checking its age again, so
// that a key renewed meanwhile by another request survives. The request
// that found it then goes round again and claims it as new.
func forgetKey(db *gorm.DB, id int64, expiredBefore time.Time) error {
	if err := db.Exec(`DELETE FROM idempotency_keys WHERE id = ? AND created_at < ?`, id, expiredBefore).Error; err != nil {
		return fmt.Errorf("forget expired key: %w", err)
	}
	return nil
}

// insertPayment creates the payment a create claimed the key for.
func insertPayment(tx *gorm.DB, cmd *command, now time.Time) (Payment, error) {
	row := models.Payment{
		ID: cmd.newID, ClientID: cmd.clientID, IdempotencyKey: cmd.key,
		AmountMinor: cmd.amount.Minor, Currency: cmd.amount.Currency, Method: string(cmd.method),
		CreatedAt: now, Status: string(StatusAuthorized),
	}
	if cmd.capture {
		row.Status, row.CapturedMinor, row.CapturedAt = string(StatusCaptured), cmd.amount.Minor, &now
	}
	if err := tx.Create(&row).Error; err != nil {
		return Payment{}, fmt.Errorf("insert payment: %w", err)
	}
	return paymentFromRow(row), nil
}

// insertRefund creates the refund an applied refund request made.
func insertRefund(tx *gorm.DB, cmd *command, p Payment, amount int64, now time.Time) (*Refund, error) {
	row := models.Refund{ID: cmd.newID, PaymentID: p.ID, AmountMinor: amount, Reason: cmd.reason,
		IdempotencyKey: cmd.key, CreatedAt: now}
	if err := tx.Create(&row).Error; err != nil {
		return nil, fmt.Errorf("insert refund: %w", err)
	}
	r := refundFromRow(row, p.Amount.Currency)
	return &r, nil
}

// attemptRow is the attempt a request records on a payment.
func attemptRow(cmd *command, outcome Outcome, paymentID string, now time.Time) models.IdempotencyAttempt {
	params := cmd.params.encode()
	return models.IdempotencyAttempt{
		PaymentID: paymentID, Operation: string(cmd.op), IdempotencyKey: cmd.key, Outcome: string(outcome),
		At: now, Params: &params, Transport: cmd.Transport, Actor: cmd.Actor, ActorAddress: cmd.Address,
	}
}

func insertAttempt(tx *gorm.DB, row models.IdempotencyAttempt) error {
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// The counter updates: the first replay and the first rejection of a
// payment's keys also stamp it (see models.Payment.ReplayedAt).
const (
	countReplaySQL    = `UPDATE payments SET replay_count = replay_count + 1, replayed_at = COALESCE(replayed_at, ?) WHERE id = ? RETURNING ` + paymentColumns
	countRejectionSQL = `UPDATE payments SET rejected_count = rejected_count + 1, rejected_at = COALESCE(rejected_at, ?) WHERE id = ? RETURNING ` + paymentColumns
)

// recordAttempt records a replay, rejection or refusal of cmd on payment
// paymentID, counts it, and answers with the payment as it is now (and,
// for a replayed refund, its refund).
func recordAttempt(tx *gorm.DB, cmd *command, outcome Outcome, paymentID string, held *heldKey, refused error, now time.Time) (answer, error) {
	row := attemptRow(cmd, outcome, paymentID, now)
	count := ""
	switch outcome {
	case OutcomeReplayed:
		if held.refundID != "" {
			row.RefundID = &held.refundID
		}
		count = countReplaySQL
	case OutcomeRejected:
		heldParams := held.params.encode()
		row.HeldParams = &heldParams
		count = countRejectionSQL
	case OutcomeRefused:
		row.Refusal = refusalCode(refused)
	default:
		return answer{}, fmt.Errorf("record attempt: unexpected outcome %s", outcome)
	}
	if err := insertAttempt(tx, row); err != nil {
		return answer{}, err
	}

	a := answer{kind: answerSettled, outcome: outcome, held: held, refused: refused}
	var ok bool
	var err error
	if count != "" {
		var p models.Payment
		res := tx.Raw(count, now, paymentID).Scan(&p)
		err, ok = res.Error, res.RowsAffected == 1
		a.payment = paymentFromRow(p)
	} else {
		a.payment, ok, err = readPayment(tx, paymentID)
	}
	if err != nil {
		return answer{}, fmt.Errorf("count attempt: %w", err)
	}
	if !ok {
		return answer{}, errors.New("count attempt: the payment is missing")
	}
	if outcome == OutcomeReplayed && held.refundID != "" {
		if a.refund, err = readRefund(tx, held.refundID, a.payment); err != nil {
			return answer{}, err
		}
	}
	return a, nil
}
