package payments

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/cmpay/cmpay/models"
)

// On PostgreSQL a create is one statement: data-modifying CTEs claim the
// key, and either create the payment and its attempt, or find the payment
// the key holds and record a replay. One round trip, one implicit
// transaction, for a new key and for a replay.
//
// The statement takes its requests as arrays, one element per request: the
// creates that arrive while others are in flight go together in the next
// statement (see batch.go), so that under load one round trip and one
// commit serve many requests. Each row is still claimed under the unique
// index on its own; a lone request is an array of one.
//
// Every CTE of a statement reads the same snapshot, taken when it starts.
// A request that loses a race waits inside "claim" for the winner to
// commit, but the winner's rows are not in its snapshot, so "held" finds
// nothing and the statement returns no row for it. Create then runs it
// once more, with a fresh snapshot that sees them: a race costs one extra
// round trip, and is never mistaken for anything else.
//
// The claim is ON CONFLICT DO NOTHING: a replay neither locks nor writes
// the key row. A held key that has expired is reported, and taken over by
// takeoverSQL in a second statement; expiry is rare, replays are not.
//
// A key reused with another payload in the same currency is refused in the
// statement too: comparing minor units and methods names the differing
// fields. Across currencies, whether the amounts differ depends on each
// currency's minor-unit digits, which Go knows and the database does not;
// such a request, and one whose key was fingerprinted under an older
// encoding, is reported HELD and settled by Go in a second statement.
//
// Parameters: $1 client ids, $2 keys, $3 fingerprints, $4 ids for new
// payments, $5 amounts in minor units, $6 currencies, $7 methods, $8
// transports (arrays, one element per request); $9 fingerprint version,
// $10 now, $11 expired-before. Each result row starts with its request's
// position in the arrays, from 1.
const CreatePostgresSQL = `WITH input AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[])
		WITH ORDINALITY AS t(client_id, idempotency_key, fingerprint, payment_id, amount_minor, currency, method, transport, n)
), claim AS (
	INSERT INTO idempotency_keys (client_id, idempotency_key, fingerprint, fingerprint_version, payment_id, created_at)
	SELECT client_id, idempotency_key, fingerprint, $9, payment_id, $10 FROM input ORDER BY n
	ON CONFLICT (client_id, idempotency_key) DO NOTHING
	RETURNING payment_id
), created AS (
	INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, replay_count, rejected_count)
	SELECT i.payment_id, i.client_id, i.idempotency_key, i.amount_minor, i.currency, i.method, $10, 0, 0
	FROM claim c JOIN input i ON i.payment_id = c.payment_id
	RETURNING ` + paymentColumns + `
), created_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	SELECT c.id, 'CREATED', $10, '', i.transport FROM created c JOIN input i ON i.payment_id = c.id
), held AS (
	SELECT i.n, i.transport, i.amount_minor, i.currency, i.method,
	       k.payment_id, k.fingerprint, k.fingerprint_version, k.created_at < $11 AS expired,
	       k.fingerprint_version = $9 AND k.fingerprint = i.fingerprint AS same
	FROM input i JOIN idempotency_keys k ON k.client_id = i.client_id AND k.idempotency_key = i.idempotency_key
	WHERE NOT EXISTS (SELECT 1 FROM claim c WHERE c.payment_id = i.payment_id)
), replayed AS (
	UPDATE payments p SET replay_count = p.replay_count + 1, replayed_at = COALESCE(p.replayed_at, $10)
	FROM held h WHERE p.id = h.payment_id AND h.same AND NOT h.expired
	RETURNING h.n, h.transport, p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at, p.replay_count, p.rejected_count
), replayed_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	SELECT id, 'REPLAYED', $10, '', transport FROM replayed
), rejected AS (
	UPDATE payments p SET rejected_count = p.rejected_count + 1, rejected_at = COALESCE(p.rejected_at, $10)
	FROM held h
	WHERE p.id = h.payment_id AND NOT h.same AND NOT h.expired AND h.fingerprint_version = $9 AND p.currency = h.currency
	RETURNING h.n, h.transport, h.amount_minor AS attempted_amount, h.currency AS attempted_currency, h.method AS attempted_method,
	       concat_ws(',', CASE WHEN p.amount_minor <> h.amount_minor THEN 'amount' END,
	                      CASE WHEN p.method <> h.method THEN 'method' END) AS differing,
	       p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at, p.replay_count, p.rejected_count
), rejected_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport)
	SELECT id, 'REJECTED', $10, differing, attempted_amount, attempted_currency, attempted_method, transport FROM rejected
)
SELECT i.n, 'CREATED', c.id, c.client_id, c.idempotency_key, c.amount_minor, c.currency, c.method, c.created_at, c.replay_count, c.rejected_count,
       NULL::bytea, NULL::int, NULL::text
FROM created c JOIN input i ON i.payment_id = c.id
UNION ALL
SELECT n, 'REPLAYED', ` + paymentColumns + `, NULL, NULL, NULL FROM replayed
UNION ALL
SELECT n, 'REJECTED', ` + paymentColumns + `, NULL, NULL, differing FROM rejected
UNION ALL
SELECT h.n, CASE WHEN h.expired THEN 'EXPIRED' ELSE 'HELD' END,
       p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at, p.replay_count, p.rejected_count,
       h.fingerprint, h.fingerprint_version, NULL
FROM held h JOIN payments p ON p.id = h.payment_id
WHERE h.expired OR NOT h.same AND NOT (h.fingerprint_version = $9 AND p.currency = h.currency)`

// takeoverSQL gives an expired key to one request and creates its payment.
// The key's age is checked again under the row's lock: of two requests
// taking over one key, the second finds it renewed and gets no row.
// $1 client id, $2 key, $3 fingerprint, $4 fingerprint version, $5 id for
// the new payment, $6 now, $7 expired-before, $8 amount in minor units, $9
// currency, $10 method, $11 transport.
const takeoverSQL = `WITH claim AS (
	UPDATE idempotency_keys
	SET fingerprint = $3, fingerprint_version = $4, payment_id = $5, created_at = $6
	WHERE client_id = $1 AND idempotency_key = $2 AND created_at < $7
	RETURNING payment_id
), created AS (
	INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, replay_count, rejected_count)
	SELECT payment_id, $1, $2, $8, $9, $10, $6, 0, 0 FROM claim
	RETURNING ` + paymentColumns + `
), created_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, outcome, at, differing_fields, transport)
	SELECT id, 'CREATED', $6, '', $11 FROM created
)
SELECT 'CREATED', ` + paymentColumns + ` FROM created`

// recordRejectionSQL records a refused attempt the create statement could
// not settle, and counts it. $1 payment, $2 at, $3 differing fields, $4
// attempted amount, $5 currency, $6 method, $7 transport.
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

// createJob is one request waiting for the create statement.
type createJob struct {
	p         payload
	fp        []byte
	paymentID string // the id its payment gets if this request creates it
	transport string
	answer    chan createAnswer // buffered: the statement never waits for the request
}

// createAnswer is what the create statement said about one request.
type createAnswer struct {
	outcome     string // CREATED, REPLAYED, REJECTED, HELD or EXPIRED
	row         models.Payment
	heldFP      []byte         // HELD and EXPIRED: the key's fingerprint
	heldVersion sql.NullInt32  // and its encoding's version
	differing   sql.NullString // REJECTED: the differing fields, comma-separated
	err         error
}

func (j *createJob) batchKey() string { return j.p.clientID + "\x00" + j.p.key }
func (j *createJob) fail(err error)   { j.answer <- createAnswer{err: err} }

// byClientAndKey is the order of a create statement's rows.
func byClientAndKey(a, b *createJob) int {
	return cmp.Or(cmp.Compare(a.p.clientID, b.p.clientID), cmp.Compare(a.p.key, b.p.key))
}

// createPostgres runs one round of Create on PostgreSQL.
func (s *Service) createPostgres(ctx context.Context, p payload, fp []byte, transport string) (recorded, error) {
	job := &createJob{p: p, fp: fp, paymentID: newPaymentID(), transport: transport, answer: make(chan createAnswer, 1)}
	s.creates.submit(job)
	var a createAnswer
	select {
	case a = <-job.answer:
	case <-ctx.Done():
		// The statement may still run; the client's retry will find what
		// it did, as after any lost answer.
		return recorded{}, fmt.Errorf("waiting for the create statement: %w", ctx.Err())
	}
	if a.err != nil {
		return recorded{}, a.err
	}
	outcome, row := a.outcome, a.row
	now := s.now()
	if outcome == "EXPIRED" {
		// The key is older than the TTL: forgotten. Take it over.
		var err error
		if outcome, row, err = s.takeOver(ctx, job, now); err != nil {
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
	case "REJECTED":
		rec.outcome = OutcomeRejected
		rec.differing = strings.Split(a.differing.String, ",")
		return rec, nil
	}

	// The key holds a payment whose fingerprint differs, or was taken
	// under an older encoding: compare under the key's own version.
	if a.heldVersion.Valid && int(a.heldVersion.Int32) != fingerprintVersion {
		old, err := fingerprint(int(a.heldVersion.Int32), p)
		if err != nil {
			return recorded{}, err
		}
		if bytes.Equal(old, a.heldFP) {
			rec.outcome = OutcomeReplayed
			err := s.sqlDB.QueryRowContext(ctx, recordReplaySQL, rec.payment.ID, now, transport).
				Scan(&rec.payment.ReplayCount, &rec.payment.RejectedCount)
			return rec, err
		}
	}
	rec.outcome = OutcomeRejected
	rec.differing = differingFields(rec.payment, p)
	err := s.sqlDB.QueryRowContext(ctx, recordRejectionSQL, rec.payment.ID, now, strings.Join(rec.differing, ","),
		p.amount.Minor, p.amount.Currency, string(p.method), transport,
	).Scan(&rec.payment.ReplayCount, &rec.payment.RejectedCount)
	if err != nil {
		return recorded{}, fmt.Errorf("record rejection: %w", err)
	}
	return rec, nil
}

// execCreates runs CreatePostgresSQL for jobs, one array element each, and
// answers them once it has committed. A job the statement returns no row
// for holds a key taken by a transaction newer than the statement's
// snapshot, or renewed or swept meanwhile: errKeyVanished, and Create goes
// round again. On error no job is answered.
func (s *Service) execCreates(ctx context.Context, jobs []*createJob) error {
	n := len(jobs)
	clientIDs, keys, ids := make([]string, n), make([]string, n), make([]string, n)
	currencies, methods, transports := make([]string, n), make([]string, n), make([]string, n)
	fps, amounts := make([][]byte, n), make([]int64, n)
	for i, j := range jobs {
		clientIDs[i], keys[i], fps[i], ids[i] = j.p.clientID, j.p.key, j.fp, j.paymentID
		amounts[i], currencies[i], methods[i], transports[i] = j.p.amount.Minor, j.p.amount.Currency, string(j.p.method), j.transport
	}
	now := s.now()
	answers := make([]createAnswer, n)
	answered := make([]bool, n)
	err := s.queryRows(ctx, func(rows pgx.Rows) error {
		var i int
		var a createAnswer
		if err := rows.Scan(&i, &a.outcome, &a.row.ID, &a.row.ClientID, &a.row.IdempotencyKey, &a.row.AmountMinor, &a.row.Currency,
			&a.row.Method, &a.row.CreatedAt, &a.row.ReplayCount, &a.row.RejectedCount, &a.heldFP, &a.heldVersion, &a.differing); err != nil {
			return err
		}
		if i < 1 || i > n || answered[i-1] {
			return fmt.Errorf("unexpected row for request %d of %d", i, n)
		}
		answers[i-1], answered[i-1] = a, true
		return nil
	}, CreatePostgresSQL, clientIDs, keys, fps, ids, amounts, currencies, methods, transports, fingerprintVersion, now, now.Add(-s.keyTTL))
	if err != nil {
		return fmt.Errorf("create statement: %w", err)
	}
	for i, j := range jobs {
		if !answered[i] {
			answers[i].err = errKeyVanished
		}
		j.answer <- answers[i]
	}
	return nil
}

// queryRows runs a batched statement straight on pgx, past database/sql,
// whose per-column conversions showed in the profile of every batch, and
// calls each for every row. It returns once the statement has ended: its
// commit included, since the statement is its own transaction.
func (s *Service) queryRows(ctx context.Context, each func(pgx.Rows) error, query string, args ...any) error {
	conn, err := s.sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		rows, err := driverConn.(*stdlib.Conn).Conn().Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		rows.Close()
		return rows.Err()
	})
}

// takeOver gives job's expired key to it and creates its payment: the
// outcome is CREATED, or errKeyVanished if another request renewed the key
// first.
func (s *Service) takeOver(ctx context.Context, job *createJob, now time.Time) (string, models.Payment, error) {
	var outcome string
	var row models.Payment
	err := s.sqlDB.QueryRowContext(ctx, takeoverSQL, job.p.clientID, job.p.key, job.fp, fingerprintVersion, job.paymentID,
		now, now.Add(-s.keyTTL), job.p.amount.Minor, job.p.amount.Currency, string(job.p.method), job.transport,
	).Scan(&outcome, &row.ID, &row.ClientID, &row.IdempotencyKey, &row.AmountMinor, &row.Currency, &row.Method,
		&row.CreatedAt, &row.ReplayCount, &row.RejectedCount)
	if errors.Is(err, sql.ErrNoRows) {
		return "", row, errKeyVanished
	}
	if err != nil {
		return "", row, fmt.Errorf("take over expired key: %w", err)
	}
	return outcome, row, nil
}
