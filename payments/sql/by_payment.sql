-- The rows of a page of payments, read in one query per kind, each
-- payment's oldest first, for both dialects: {{in_payment_ids}} is how
-- each takes the list of ids in $1 (postgres.sql, sqlite.sql; sql.go
-- expands it).

-- name: attempts_of
-- The attempts of the payments in $1, in scanAttempt's column order
-- (rows.go): the timelines of a page of payments (AttemptsOf).
SELECT id, payment_id, operation, outcome, at, idempotency_key, params, held_params, refusal, refund_id,
       differing_fields, attempted_amount_minor, attempted_currency, attempted_method, transport, actor, actor_address
FROM idempotency_attempts WHERE payment_id {{in_payment_ids}} ORDER BY payment_id, at, id

-- name: async_states_of
-- The next action, payment and expiry times of the payments in $1, each
-- with its id, in scanAsyncState's column order (list.go): what a page of
-- Pix and boleto payments shows (AsyncStatesOf).
SELECT id, next_action_type, pix_code, boleto_line, hosted_url, next_action_expires_at, paid_at, expired_at
FROM payments WHERE id {{in_payment_ids}}

-- name: refunds_of
-- The refunds of the payments in $1, in scanRefund's column order
-- (RefundsOf).
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at, status, failure_code, returned_at,
       settled_at
FROM refunds WHERE payment_id {{in_payment_ids}} ORDER BY payment_id, created_at, id

-- name: processor_calls_of
-- The processor calls of the payments in $1, in scanProcessorCall's column
-- order (ProcessorCallsOf): the rows of processor_calls, and the calls the
-- sandbox answered before they were stored, which have no row:
--   - a create's, read from its payment (marked create_foreseen; the
--     operation's id is "op_" and the payment's ULID: createOpID);
--   - a capture's, cancel's or refund's, read from its APPLIED attempt,
--     which names the call's operation (request_id) where no operation
--     row was stored for it (a change asked at a processor stores one,
--     and its attempt names it too) and no call row either: changes
--     stored before attempts named a foreseen call's operation kept a
--     call row (their attempts name none), and so do those an older
--     build makes, or the rows given back before a rollback
--     (docs/operations/postgresql.md), so no call is listed twice.
-- Each is a WRITE, SUCCEEDED (or a create's DECLINED), at its change's
-- time, 0 ms, its record's state not kept, first among calls of the same
-- time.
SELECT payment_id, operation, kind, processor_key, outcome, code, record_state, at, duration_ms FROM (
	SELECT id AS payment_id, 'CREATE_PAYMENT' AS operation, 'WRITE' AS kind, 'cmpay_op_' || substr(id, 5) AS processor_key,
	       CASE WHEN status = 'DECLINED' THEN 'DECLINED' ELSE 'SUCCEEDED' END AS outcome, decline_code AS code,
	       CAST(NULL AS VARCHAR(20)) AS record_state, created_at AS at, 0 AS duration_ms, 0 AS id
	FROM payments WHERE id {{in_payment_ids}} AND create_foreseen
	UNION ALL
	SELECT a.payment_id, a.operation, 'WRITE', 'cmpay_' || a.request_id, 'SUCCEEDED', CAST(NULL AS VARCHAR(100)),
	       CAST(NULL AS VARCHAR(20)), a.at, 0, 0
	FROM idempotency_attempts a
	WHERE a.payment_id {{in_payment_ids}} AND a.outcome = 'APPLIED' AND a.request_id IS NOT NULL
	  AND NOT EXISTS (SELECT 1 FROM processor_operations o WHERE o.id = a.request_id)
	  AND NOT EXISTS (SELECT 1 FROM processor_calls c WHERE c.payment_id = a.payment_id AND c.operation_id = a.request_id)
	UNION ALL
	SELECT payment_id, operation, kind, processor_key, outcome, code, record_state, at, duration_ms, id
	FROM processor_calls WHERE payment_id {{in_payment_ids}}
) AS calls ORDER BY payment_id, at, id
