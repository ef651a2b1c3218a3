-- The seeding statements on PostgreSQL (seed.go). The first two take $1
-- the id prefix (ids and keys are the prefix and 1 to n), $2 the client,
-- $3 n, $4 the time. The casts type parameters that stand in a SELECT
-- list, where PostgreSQL cannot infer their type.

-- name: seed_payments
-- Stores n payments as createPayment leaves them: $5 amount in minor
-- units, $6 status, $7 captured minor units, $8 captured at (null when
-- nothing is captured).
INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
	status, captured_minor, captured_at, refunded_minor, replay_count, rejected_count)
SELECT $1::text || i, $2::text, $1::text || i, $5::bigint, 'BRL', 'PIX', $4::timestamptz,
	$6::text, $7::bigint, $8::timestamptz, 0, 0, 0
FROM generate_series(1, $3::int) AS g(i);

-- name: seed_keys
-- Stores each payment's key: $5 the fingerprint of $6, its params.
INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version,
	params, payment_id, created_at)
SELECT $2::text, $1::text || i, 'CREATE_PAYMENT', $5::bytea, 2, $6::text, $1::text || i, $4::timestamptz
FROM generate_series(1, $3::int) AS g(i);

-- name: seed_attempts
-- Stores each payment's creation attempt. It has no client: $1 the
-- prefix, $2 n, $3 the time, $4 its params.
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport,
	actor, actor_address, refusal, differing_fields)
SELECT $1::text || i, 'CREATE_PAYMENT', $1::text || i, 'CREATED', $3::timestamptz, $4::text, 'seed', '', '', '', ''
FROM generate_series(1, $2::int) AS g(i);
