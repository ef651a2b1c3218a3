package payments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/cmpay/cmpay/models"
)

// CreateResult is the answer to a create that was not refused.
type CreateResult struct {
	Payment Payment
	// Replayed is true when the key had been used with the same payload and
	// the payment it created is returned.
	Replayed bool
}

// createTimeout bounds a create, including one whose client went away.
const createTimeout = 15 * time.Second

// maxClaimRounds bounds how often Create starts over when the key it lost
// to is gone by the time it reads it (expired and swept in between).
const maxClaimRounds = 3

// errKeyVanished: the key that beat this request was gone when read.
var errKeyVanished = errors.New("idempotency key vanished while being read")

// Create creates the payment a request asks for, exactly once per client
// and idempotency key:
//
//   - a new key creates the payment;
//   - the same key with the same payload returns that payment, unchanged,
//     with Replayed set;
//   - the same key with another payload fails with a *KeyReusedError;
//   - a key older than the TTL is forgotten and handled as new.
//
// The database's unique index on (client_id, idempotency_key) decides which
// of any number of simultaneous requests, on any number of instances,
// creates the payment; the others wait for it and return it. Every outcome
// is recorded as an attempt of the payment. Bad input fails with an
// *InvalidInputError and writes nothing.
func (s *Service) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	p, err := req.validate()
	if err != nil {
		return CreateResult{}, err
	}
	fp, err := fingerprint(fingerprintVersion, p)
	if err != nil {
		return CreateResult{}, fmt.Errorf("create payment: %w", err)
	}

	// Once started, the work commits or rolls back as a unit even if the
	// client goes away: its retry then finds the payment or nothing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()

	for range maxClaimRounds {
		rec, err := s.createOnce(ctx, p, fp, req.Transport)
		if errors.Is(err, errKeyVanished) {
			continue
		}
		if err != nil {
			return CreateResult{}, fmt.Errorf("create payment: %w", err)
		}
		s.onAttempt(rec.outcome, req.Transport)
		if rec.outcome == OutcomeRejected {
			return CreateResult{}, &KeyReusedError{PaymentID: rec.payment.ID, DifferingFields: rec.differing}
		}
		return CreateResult{Payment: rec.payment, Replayed: rec.outcome == OutcomeReplayed}, nil
	}
	return CreateResult{}, fmt.Errorf("create payment: %w (%d times)", errKeyVanished, maxClaimRounds)
}

// recorded is what one round of Create did.
type recorded struct {
	outcome   Outcome
	payment   Payment
	differing []string
}

// createOnce runs one round of Create: one statement on PostgreSQL, one
// transaction elsewhere. Both claim the key under the unique index, then
// create the payment or record a repeat of the key's payment.
func (s *Service) createOnce(ctx context.Context, p payload, fp []byte, transport string) (recorded, error) {
	if s.postgres && s.sqlDB != nil {
		return s.createPostgres(ctx, p, fp, transport)
	}
	return s.createInTransaction(ctx, p, fp, transport)
}

// newPaymentID makes the id a payment gets if this request creates it:
// "pay_" and a ULID, which sorts by creation time.
func newPaymentID() string { return "pay_" + ulid.Make().String() }

// createInTransaction is createOnce for databases without data-modifying
// CTEs (SQLite): the same steps as statements of one transaction, which
// SQLite runs one writer at a time (BEGIN IMMEDIATE).
func (s *Service) createInTransaction(ctx context.Context, p payload, fp []byte, transport string) (recorded, error) {
	var rec recorded
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := s.now()
		id := newPaymentID()
		claimed, err := claimKey(tx, p, fp, id, now, now.Add(-s.keyTTL))
		if err != nil {
			return err
		}
		if claimed {
			rec, err = insertPayment(tx, p, id, now, transport)
		} else {
			rec, err = recordRepeat(tx, p, fp, now, transport)
		}
		return err
	})
	return rec, err
}

// claimKey inserts the key, or takes over an expired one, in one statement
// guarded by the unique index. It reports whether this request owns the key
// now. A live key owned by another request is left alone; on PostgreSQL the
// statement waits until that request's transaction ends, so a loser always
// finds the winner's committed row, and never meets a unique violation that
// would abort its transaction.
func claimKey(tx *gorm.DB, p payload, fp []byte, paymentID string, now, expiredBefore time.Time) (bool, error) {
	key := models.IdempotencyKey{
		ClientID:           p.clientID,
		Key:                p.key,
		Fingerprint:        fp,
		FingerprintVersion: fingerprintVersion,
		PaymentID:          paymentID,
		CreatedAt:          now,
	}
	res := tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "client_id"}, {Name: "idempotency_key"}},
		DoUpdates: clause.AssignmentColumns([]string{"fingerprint", "fingerprint_version", "payment_id", "created_at"}),
		Where: clause.Where{Exprs: []clause.Expression{
			clause.Lt{Column: clause.Column{Table: "idempotency_keys", Name: "created_at"}, Value: expiredBefore},
		}},
	}).Create(&key)
	if res.Error != nil {
		return false, fmt.Errorf("claim key: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// insertPayment creates the payment whose key this request just claimed.
func insertPayment(tx *gorm.DB, p payload, id string, now time.Time, transport string) (recorded, error) {
	row := models.Payment{
		ID:             id,
		ClientID:       p.clientID,
		IdempotencyKey: p.key,
		AmountMinor:    p.amount.Minor,
		Currency:       p.amount.Currency,
		Method:         string(p.method),
		CreatedAt:      now,
	}
	if err := tx.Create(&row).Error; err != nil {
		return recorded{}, fmt.Errorf("insert payment: %w", err)
	}
	attempt := models.IdempotencyAttempt{PaymentID: id, Outcome: string(OutcomeCreated), At: now, Transport: transport}
	if err := tx.Create(&attempt).Error; err != nil {
		return recorded{}, fmt.Errorf("record attempt: %w", err)
	}
	return recorded{outcome: OutcomeCreated, payment: paymentFromRow(row)}, nil
}

// The counter updates, returning both counts as they are after this
// attempt; the first of each kind also marks the payment (see
// models.Payment.ReplayedAt).
const (
	countReplay    = `UPDATE payments SET replay_count = replay_count + 1, replayed_at = COALESCE(replayed_at, ?) WHERE id = ? RETURNING replay_count, rejected_count`
	countRejection = `UPDATE payments SET rejected_count = rejected_count + 1, rejected_at = COALESCE(rejected_at, ?) WHERE id = ? RETURNING replay_count, rejected_count`
)

// keyedPayment is a key joined to the payment it created.
type keyedPayment struct {
	models.Payment     `gorm:"embedded"`
	Fingerprint        []byte
	FingerprintVersion int
}

// recordRepeat handles a request whose key is already held: it compares
// payloads, records the attempt and bumps the payment's counter. Only a key
// row that is really there counts; if it is gone, errKeyVanished sends
// Create round again.
func recordRepeat(tx *gorm.DB, p payload, fp []byte, now time.Time, transport string) (recorded, error) {
	var held keyedPayment
	res := tx.Raw(`SELECT p.*, k.fingerprint, k.fingerprint_version
		FROM idempotency_keys k JOIN payments p ON p.id = k.payment_id
		WHERE k.client_id = ? AND k.idempotency_key = ?`, p.clientID, p.key).Scan(&held)
	if res.Error != nil {
		return recorded{}, fmt.Errorf("read key: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return recorded{}, errKeyVanished
	}
	payment := paymentFromRow(held.Payment)

	heldFP := fp
	if held.FingerprintVersion != fingerprintVersion {
		var err error
		if heldFP, err = fingerprint(held.FingerprintVersion, p); err != nil {
			return recorded{}, err
		}
	}

	rec := recorded{outcome: OutcomeReplayed}
	attempt := models.IdempotencyAttempt{PaymentID: payment.ID, At: now, Transport: transport}
	count := countReplay
	if !bytes.Equal(held.Fingerprint, heldFP) {
		rec.outcome = OutcomeRejected
		rec.differing = differingFields(payment, p)
		attempt.DifferingFields = strings.Join(rec.differing, ",")
		attempt.AttemptedAmountMinor = &p.amount.Minor
		attempt.AttemptedCurrency = &p.amount.Currency
		method := string(p.method)
		attempt.AttemptedMethod = &method
		count = countRejection
	}
	attempt.Outcome = string(rec.outcome)
	if err := tx.Create(&attempt).Error; err != nil {
		return recorded{}, fmt.Errorf("record attempt: %w", err)
	}
	err := tx.Raw(count, now, payment.ID).Row().Scan(&payment.ReplayCount, &payment.RejectedCount)
	if err != nil {
		return recorded{}, fmt.Errorf("count attempt: %w", err)
	}
	rec.payment = payment
	return rec, nil
}

func paymentFromRow(row models.Payment) Payment {
	return Payment{
		ID:             row.ID,
		ClientID:       row.ClientID,
		Amount:         Money{Minor: row.AmountMinor, Currency: row.Currency},
		Method:         Method(row.Method),
		IdempotencyKey: row.IdempotencyKey,
		CreatedAt:      row.CreatedAt.UTC(),
		ReplayCount:    row.ReplayCount,
		RejectedCount:  row.RejectedCount,
	}
}
