-- The seeding statements on SQLite (seed.go), the same as PostgreSQL's
-- (seed.postgres.sql, which says what each parameter is) but for the
-- series, which SQLite counts with a recursive query.

-- name: seed_payments
-- Stores n payments as createPayment leaves them.
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $3)
INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
	status, captured_minor, captured_at, refunded_minor, replay_count, rejected_count)
SELECT $1 || i, $2, $1 || i, $5, 'BRL', 'PIX', $4, $6, $7, $8, 0, 0, 0 FROM g;

-- name: seed_keys
-- Stores each payment's key.
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $3)
INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version,
	params, payment_id, created_at)
SELECT $2, $1 || i, 'CREATE_PAYMENT', $5, 2, $6, $1 || i, $4 FROM g;

-- name: seed_attempts
-- Stores each payment's creation attempt ($1 prefix, $2 n, $3 time, $4
-- params).
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $2)
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport,
	actor, actor_address, refusal, differing_fields)
SELECT $1 || i, 'CREATE_PAYMENT', $1 || i, 'CREATED', $3, $4, 'seed', '', '', '', '' FROM g;
