-- name: settle_create_batch
-- Phase 3 of a batch of creates asked at the processor (operations.go:
-- askCreate), in one statement and so one round trip and one commit
-- (group commit: batch.go), where settling each alone took a transaction
-- of six round trips (record). PostgreSQL.
--
-- Each create's call is recorded, once: run again with the same answers
-- (the batcher does, after a statement whose answer was lost, perhaps
-- after its commit, perhaps while it still runs), the statement meets the
-- call's id (settleJob) under its unique index, waits for the first run's
-- end if it must, and writes no second one. Its operation is settled only
-- while it is unsettled (settle_operation's rule: the first word of the
-- processor settles it, whoever carried it), and only then its payment set
-- to the processor's answer (settle_created) with its event, all committed
-- together or not at all. An operation settled already (by recovery, on
-- any instance) comes back NOT_SETTLED: the engine reads its payment with
-- a statement of its own, whose snapshot sees the other settlement, as
-- record does. An operation whose payment is missing is not settled
-- either, and the read says so.
--
-- Parameters, one array element per create: $1 operation ids, $2
-- payments, $3 call outcomes, $4 codes (error or decline), $5 durations
-- in ms, $6 operation states (SUCCEEDED or DECLINED), $7 payment statuses,
-- $8 processor references, $9 decline codes, $10 event types, and a
-- PENDING payment's next action: $11 type, $12 Pix code, $13 boleto line,
-- $14 hosted URL, $15 expiry; $16 call ids; $17 the states of the
-- processor's records the answers gave. Then $18 now.
-- Result rows: the create's position, SETTLED or NOT_SETTLED, and a
-- SETTLED row's payment in paymentColumns' order.
-- Plan: $1 is read through a sub-select, whose value the planner does not
-- see, so that a plan made for one request's arguments counts on as many
-- requests as the generic plan does and is estimated no cheaper: PostgreSQL
-- then keeps the generic plan instead of planning every statement again,
-- which for one request costs more than running it
-- (TestStatementsKeepGenericPlans).
WITH input AS (
	SELECT * FROM unnest((SELECT $1::text[]), $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
	                     $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
	                     $15::timestamptz[], $16::text[], $17::text[])
		WITH ORDINALITY AS t(op_id, payment_id, call_outcome, code, duration_ms, op_state, status, reference,
		                     decline_code, event_type, na_type, pix_code, boleto_line, hosted_url, na_expires, call_id,
		                     record_state, n)
),
call AS (
	INSERT INTO processor_calls (operation_id, payment_id, operation, processor_key, kind, outcome, code, at, duration_ms,
	                             call_id, record_state)
	SELECT op_id, payment_id, 'CREATE_PAYMENT', 'cmpay_' || op_id, 'WRITE', call_outcome, code, $18, duration_ms,
	       NULLIF(call_id, ''), record_state
	FROM input ORDER BY n
	ON CONFLICT (call_id) WHERE call_id IS NOT NULL DO NOTHING
),
settled AS (
	UPDATE processor_operations o SET state = i.op_state, code = i.code, settled_at = $18, sends = o.sends + 1,
	       lease_owner = NULL, lease_until = NULL, last_error = NULL
	FROM input i
	WHERE o.id = i.op_id AND o.settled_at IS NULL AND EXISTS (SELECT 1 FROM payments p WHERE p.id = i.payment_id)
	RETURNING i.n
),
paid AS (
	UPDATE payments p SET status = i.status, processor_reference = COALESCE(i.reference, p.processor_reference),
	       decline_code = i.decline_code,
	       captured_minor = CASE WHEN i.status = 'CAPTURED' THEN p.amount_minor ELSE p.captured_minor END,
	       captured_at = CASE WHEN i.status = 'CAPTURED' THEN $18 ELSE p.captured_at END,
	       next_action_type = i.na_type, pix_code = i.pix_code, boleto_line = i.boleto_line, hosted_url = i.hosted_url,
	       next_action_expires_at = i.na_expires, processor_updated_at = $18
	FROM settled s JOIN input i ON i.n = s.n
	WHERE p.id = i.payment_id
	RETURNING i.n, i.event_type, p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
	          p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count,
	          p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token
),
-- event: the outbox row of each settled create (insert_event's columns),
-- the payment as "paid" left it.
event AS (
	INSERT INTO payment_events (type, at, idempotency_key, refund_id, payment_id, client_id,
	                            payment_key, amount_minor, currency, method, payment_created_at, status, captured_minor,
	                            refunded_minor, captured_at, canceled_at, replay_count, rejected_count)
	SELECT event_type, $18, idempotency_key, NULL, id, client_id, idempotency_key, amount_minor, currency, method,
	       created_at, status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count
	FROM paid
)
SELECT n, 'SETTLED', id, client_id, idempotency_key, amount_minor, currency, method, created_at,
       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count,
       processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
FROM paid
UNION ALL
SELECT n, 'NOT_SETTLED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM settled s WHERE s.n = i.n)
