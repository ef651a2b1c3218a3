-- PostgreSQL's own statements (store_postgres.go), beside the two batch
-- statements in create_batch.sql and change_batch.sql.

-- name: record_attempt
-- Records a replay, a rejection or a refusal that the engine decided after
-- a batch statement (engine.go), in one statement, so one round trip and
-- no transaction of its own: counts a replay or a rejection on the payment
-- (the first of each also stamps it: models.Payment.ReplayedAt), writes the
-- attempt, and returns the payment as it is now and, for a replayed
-- refund, its refund. The attempt is written from the payment row it
-- found: when the payment is missing (a damaged database) nothing is
-- written, no row comes back, and the request fails.
-- $1 payment id, $2 operation, $3 key, $4 outcome (REPLAYED, REJECTED or
-- REFUSED), $5 time, $6 params, $7 the held key's params (a rejection's),
-- $8 refusal (the rule that refused), $9 refund id (a replayed refund's),
-- $10 transport, $11 actor, $12 actor address.
WITH counted AS (
	UPDATE payments SET
		replay_count = replay_count + CASE WHEN $4::text = 'REPLAYED' THEN 1 ELSE 0 END,
		replayed_at = CASE WHEN $4::text = 'REPLAYED' THEN COALESCE(replayed_at, $5::timestamptz) ELSE replayed_at END,
		rejected_count = rejected_count + CASE WHEN $4::text = 'REJECTED' THEN 1 ELSE 0 END,
		rejected_at = CASE WHEN $4::text = 'REJECTED' THEN COALESCE(rejected_at, $5::timestamptz) ELSE rejected_at END
	WHERE id = $1::text AND $4::text IN ('REPLAYED', 'REJECTED')
	RETURNING id, client_id, idempotency_key, amount_minor, currency, method, created_at,
	          status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count
),
-- payment: the counted payment, or a refused request's as it is (a
-- refusal changes nothing).
payment AS (
	SELECT * FROM counted
	UNION ALL
	SELECT id, client_id, idempotency_key, amount_minor, currency, method, created_at,
	       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count
	FROM payments WHERE id = $1::text AND $4::text = 'REFUSED'
),
attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, held_params,
	                                  refusal, refund_id, transport, actor, actor_address)
	SELECT id, $2::text, $3::text, $4::text, $5::timestamptz, $6::text, $7::text, $8::text, $9::text,
	       $10::text, $11::text, $12::text
	FROM payment
)
SELECT p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
       p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count,
       r.id, r.payment_id, r.amount_minor, r.reason, r.idempotency_key, r.created_at
FROM payment p LEFT JOIN refunds r ON r.id = $9::text

-- name: attempts_of
-- The attempts of the payments whose ids are in the array $1, each
-- payment's oldest first, in scanAttempt's column order (rows.go): the
-- timelines of a page of payments in one query (AttemptsOf).
SELECT id, payment_id, operation, outcome, at, idempotency_key, params, held_params, refusal, refund_id,
       differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport, actor, actor_address
FROM idempotency_attempts WHERE payment_id = ANY($1::text[]) ORDER BY payment_id, at, id

-- name: refunds_of
-- The refunds of the payments whose ids are in the array $1, each
-- payment's oldest first, in scanRefund's column order (RefundsOf).
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at
FROM refunds WHERE payment_id = ANY($1::text[]) ORDER BY payment_id, created_at, id

-- name: attempt_counts
-- Counts the attempts made since $1 by hour (hours since the Unix epoch)
-- and outcome, reading the attempts' time index over that window only
-- (RecentStats).
SELECT CAST(floor(extract(epoch FROM at) / 3600) AS bigint) AS hour, outcome, count(*) AS n
FROM idempotency_attempts WHERE at >= $1 GROUP BY 1, 2

-- name: sweep_keys
-- Deletes up to $2 keys created before $1 (SweepExpiredKeys). It skips
-- rows other transactions hold (a request forgetting an expired key,
-- another instance's sweep), and checks each row's age again as it
-- deletes it, so that a key renewed in between survives.
DELETE FROM idempotency_keys WHERE created_at < $1 AND id IN
	(SELECT id FROM idempotency_keys WHERE created_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
