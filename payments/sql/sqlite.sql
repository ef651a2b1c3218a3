-- SQLite's own statements (store_sqlite.go): the steps each request runs,
-- one statement at a time, inside its batch's write transaction, where
-- nothing else writes.

-- name: insert_payment
-- Creates the payment a create claimed its key for: what createdPayment
-- (steps.go) says a create makes, nothing replayed or rejected yet.
INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method,
                      created_at, status, captured_minor, refunded_minor, captured_at, replay_count, rejected_count,
                      processor, processor_reference, decline_code, payment_method_token, reserved_minor,
                      create_foreseen)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, 0, 0, $11, $12, $13, $14, 0, $15)

-- name: insert_refund
-- Creates the refund an applied refund request made.
INSERT INTO refunds (id, payment_id, amount_minor, reason, idempotency_key, created_at)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: apply_one_change
-- apply_change (common.sql) for one request, given as the one row of
-- target: $1 operation, $2 payment, $3 amount in minor units, $4 whether no
-- amount was given, $5 now. No row comes back when the rules refuse it.
WITH target AS (SELECT $1 AS req_operation, $2 AS req_payment_id, $3 AS req_amount, $4 AS req_all,
                       1 AS req_ready, $5 AS req_now)
{{apply_change}}

-- name: attempt_counts
-- Counts the attempts made since $1 by hour (hours since the Unix epoch)
-- and outcome. A time is stored as text; its first 19 characters are the
-- UTC second strftime reads.
SELECT CAST(strftime('%s', substr(at, 1, 19)) AS INTEGER) / 3600 AS hour, outcome, count(*) AS n
FROM idempotency_attempts WHERE at >= $1 GROUP BY 1, 2

-- name: sweep_keys
-- Deletes up to $2 keys created before $1, but not the keys of a payment
-- with work in flight at its processor. No row locks are needed: SQLite
-- has one writer at a time.
DELETE FROM idempotency_keys WHERE id IN
	(SELECT k.id FROM idempotency_keys k
	 WHERE k.created_at < $1
	   AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = k.payment_id AND {{payment_in_flight}})
	 LIMIT $2)

-- name: claim_due
-- PostgreSQL's claim_due without row locks: SQLite runs one writing
-- statement at a time, so no two instances claim one operation.
UPDATE processor_operations SET lease_owner = $1, lease_until = $2
WHERE id IN (SELECT id FROM processor_operations
             WHERE settled_at IS NULL AND next_try_at <= $3 AND (lease_until IS NULL OR lease_until < $3)
               AND processor IN ($5, $6)
             ORDER BY next_try_at LIMIT $4)
RETURNING id

-- name: lock_payment
-- PostgreSQL's lock_payment: a plain read, SQLite's transaction holding
-- the one write lock already.
SELECT id, client_id, idempotency_key, amount_minor, currency, method, created_at,
       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
FROM payments WHERE id = $1

-- name: in_payment_ids
-- "Is one of the payment ids in the JSON array $1" (SQLite has no arrays),
-- completing a WHERE on a payment id (by_payment.sql).
IN (SELECT value FROM json_each($1))

-- name: claim_authorizations
-- PostgreSQL's claim_authorizations without row locks: SQLite runs one
-- writing statement at a time, so no two instances claim one payment.
-- INDEXED BY: without ANALYZE's statistics SQLite reads every AUTHORIZED
-- row through idx_payments_status_created and sorts them each round.
UPDATE payments SET auth_checked_at = $1
WHERE id IN (SELECT id FROM payments INDEXED BY idx_payments_auth_check
             WHERE status = 'AUTHORIZED' AND processor <> 'sandbox'
               AND COALESCE(auth_checked_at, created_at) <= $2
               AND processor = $3 AND pending_operation IS NULL AND processor_reference IS NOT NULL
             ORDER BY COALESCE(auth_checked_at, created_at) LIMIT $4)
RETURNING id
