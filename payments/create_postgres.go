package payments

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cmpay/cmpay/models"
)

// On PostgreSQL a create is one statement: data-modifying CTEs claim the
// key, and either create the payment and its attempt, or find the payment
// the key holds and record a replay. One round trip, one implicit
// transaction, for a new key and for a replay.
//
// Every CTE of a statement reads the same snapshot, taken when it starts.
// A request that loses a race waits inside "claim" for the winner to
// commit, but the winner's rows are not in its snapshot, so "held" finds
// nothing and the statement returns no row. Create then runs it once more,
// with a fresh snapshot that sees them: a race costs one extra round trip,
// and is never mistaken for anything else.
//
// The claim is ON CONFLICT DO NOTHING: a replay neither locks nor writes
// the key row. A held key that has expired is reported, and taken over by
// takeoverSQL in a second statement; expiry is rare, replays are not.
//
// Parameters, shared by createSQL and takeoverSQL: $1 client id, $2 key,
// $3 fingerprint, $4 fingerprint version, $5 id for a new payment, $6 now,
// $7 expired-before, $8 amount in minor units, $9 currency, $10 method,
// $11 transport.
const (
	// createFromClaim creates the payment and its attempt for the key row
	// a "claim" CTE returns, if it returns one.
	createFromClaim = `, created AS (
	INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, replay_count, rejected_count)
	SELECT payment_id, $1, $2, $8, $9, $10, $6, 0, 0 FROM claim
	RETURNING ` + paymentColumns + `
), created_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	SELECT id, 'CREATED', $6, '', $11 FROM created
)`

	// CreatePostgresSQL is the statement every create runs on PostgreSQL.
	// It is exported for cmd/cmpay-bench, which runs it under pgbench.
	CreatePostgresSQL = `WITH claim AS (
	INSERT INTO idempotency_keys (client_id, idempotency_key, fingerprint, fingerprint_version, payment_id, created_at)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (client_id, idempotency_key) DO NOTHING
	RETURNING payment_id
)` + createFromClaim + `, held AS (
	SELECT k.payment_id, k.fingerprint, k.fingerprint_version, k.created_at < $7 AS expired,
	       k.fingerprint_version = $4 AND k.fingerprint = $3 AS same
	FROM idempotency_keys k
	WHERE k.client_id = $1 AND k.idempotency_key = $2 AND NOT EXISTS (SELECT 1 FROM claim)
), replayed AS (
	UPDATE payments p SET replay_count = p.replay_count + 1, replayed_at = COALESCE(p.replayed_at, $6)
	FROM held WHERE p.id = held.payment_id AND held.same AND NOT held.expired
	RETURNING p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at, p.replay_count, p.rejected_count
), replayed_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	SELECT id, 'REPLAYED', $6, '', $11 FROM replayed
)
SELECT 'CREATED', ` + paymentColumns + `, NULL::bytea, NULL::int FROM created
UNION ALL
SELECT 'REPLAYED', ` + paymentColumns + `, NULL, NULL FROM replayed
UNION ALL
SELECT CASE WHEN held.expired THEN 'EXPIRED' ELSE 'HELD' END,
       p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at, p.replay_count, p.rejected_count,
       held.fingerprint, held.fingerprint_version
FROM held JOIN payments p ON p.id = held.payment_id WHERE held.expired OR NOT held.same`

	// takeoverSQL gives an expired key to this request and creates its
	// payment. The key's age is checked again under the row's lock: of two
	// requests taking over one key, the second finds it renewed and gets
	// no row.
	takeoverSQL = `WITH claim AS (
	UPDATE idempotency_keys
	SET fingerprint = $3, fingerprint_version = $4, payment_id = $5, created_at = $6
	WHERE client_id = $1 AND idempotency_key = $2 AND created_at < $7
	RETURNING payment_id
)` + createFromClaim + `
SELECT 'CREATED', ` + paymentColumns + `, NULL::bytea, NULL::int FROM created`
)

// recordRejectionSQL records a refused attempt and counts it, in one
// statement. $1 payment, $2 at, $3 differing fields, $4 attempted amount,
// $5 currency, $6 method, $7 transport.
const recordRejectionSQL = `WITH attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport)
	VALUES ($1, 'REJECTED', $2, $3, $4, $5, $6, $7)
)
UPDATE payments SET rejected_count = rejected_count + 1, rejected_at = COALESCE(rejected_at, $2)
WHERE id = $1 RETURNING replay_count, rejected_count`

// recordReplaySQL records a replay the create statement could not tell
// from a conflict: a key fingerprinted under an older encoding.
// $1 payment, $2 at, $3 transport.
const recordReplaySQL = `WITH attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	VALUES ($1, 'REPLAYED', $2, '', $3)
)
UPDATE payments SET replay_count = replay_count + 1, replayed_at = COALESCE(replayed_at, $2)
WHERE id = $1 RETURNING replay_count, rejected_count`

// createPostgres runs one round of Create on PostgreSQL.
func (s *Service) createPostgres(ctx context.Context, p payload, fp []byte, transport string) (recorded, error) {
	now := s.now()
	args := []any{p.clientID, p.key, fp, fingerprintVersion, newPaymentID(), now, now.Add(-s.keyTTL),
		p.amount.Minor, p.amount.Currency, string(p.method), transport}
	outcome, row, heldFP, heldVersion, err := s.runCreate(ctx, CreatePostgresSQL, args)
	if err != nil {
		return recorded{}, err
	}
	if outcome == "EXPIRED" {
		// The key is older than the TTL: forgotten. Take it over.
		if outcome, row, _, _, err = s.runCreate(ctx, takeoverSQL, args); err != nil {
			return recorded{}, err
		}
	}

	rec := recorded{payment: paymentFromRow(row)}
	switch outcome {
	case "CREATED":
		rec.outcome = OutcomeCreated
		return rec, nil
	case "REPLAYED":
		rec.outcome = OutcomeReplayed
		return rec, nil
	}

	// The key holds a payment whose fingerprint differs, or was taken
	// under an older encoding: compare under the key's own version.
	if heldVersion.Valid && int(heldVersion.Int32) != fingerprintVersion {
		old, err := fingerprint(int(heldVersion.Int32), p)
		if err != nil {
			return recorded{}, err
		}
		if bytes.Equal(old, heldFP) {
			rec.outcome = OutcomeReplayed
			err := s.sqlDB.QueryRowContext(ctx, recordReplaySQL, rec.payment.ID, now, transport).
				Scan(&rec.payment.ReplayCount, &rec.payment.RejectedCount)
			return rec, err
		}
	}
	rec.outcome = OutcomeRejected
	rec.differing = differingFields(rec.payment, p)
	err = s.sqlDB.QueryRowContext(ctx, recordRejectionSQL, rec.payment.ID, now, strings.Join(rec.differing, ","),
		p.amount.Minor, p.amount.Currency, string(p.method), transport,
	).Scan(&rec.payment.ReplayCount, &rec.payment.RejectedCount)
	if err != nil {
		return recorded{}, fmt.Errorf("record rejection: %w", err)
	}
	return rec, nil
}

// runCreate runs CreatePostgresSQL or takeoverSQL and reads its one row. No
// row means the key is held by a transaction newer than the statement's
// snapshot, or was renewed or swept meanwhile: errKeyVanished, and Create
// goes round again.
func (s *Service) runCreate(ctx context.Context, query string, args []any) (outcome string, row models.Payment, heldFP []byte, heldVersion sql.NullInt32, err error) {
	err = s.sqlDB.QueryRowContext(ctx, query, args...).Scan(&outcome, &row.ID, &row.ClientID, &row.IdempotencyKey,
		&row.AmountMinor, &row.Currency, &row.Method, &row.CreatedAt, &row.ReplayCount, &row.RejectedCount, &heldFP, &heldVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return "", row, nil, heldVersion, errKeyVanished
	}
	if err != nil {
		return "", row, nil, heldVersion, fmt.Errorf("create statement: %w", err)
	}
	return outcome, row, heldFP, heldVersion, nil
}
