-- name: change_batch
-- capturePayment, cancelPayment and refundPayment for a batch of requests,
-- at most one per payment, in one statement and so one round trip and one
-- commit (group commit: batch.go). PostgreSQL.
--
-- For each request, in the contract's order: the payment (none:
-- NOT_FOUND); what stops the request before its key is looked at (another
-- client's payment, an amount that is no whole number of the payment's
-- minor units); the key (held: a replay settled here as in create_batch,
-- anything else HELD for decide in Go); then the change itself,
-- apply_change, whose WHERE is the lifecycle's rules. A request the change
-- does not apply to comes back NOT_APPLIED with the payment as the
-- snapshot shows it, and the engine says which rule refused it, or, if the
-- snapshot allows it, sends it again: the payment changed after the
-- snapshot was taken (decide.go).
--
-- Races. Requests on one payment queue on its row lock in apply_change,
-- and each is judged against the row as the last one left it. Two requests
-- with one key: the second to commit fails in "claim", which is a plain
-- INSERT on purpose, with a unique violation that rolls the whole
-- statement back, its change included; the engine runs it again and it
-- finds the key held.
--
-- Parameters, one array element per request: $1 operations, $2 payment
-- ids, $3 keys, $4 fingerprints, $5 canonical params, $6 amount given,
-- $7 reasons, $8 ids for new refunds, $9 transports, $10 actors, $11 actor
-- addresses, $12 client scopes ('' for any client). $13 holds the amounts
-- in minor units, $14 per request: element (n-1)*$14 + d + 1 is the amount
-- for a currency of d digits, NULL when it is no whole number of its minor
-- units. Then $15 the fingerprint version, $16 now, $17 expired-before;
-- $18, one per request, the ids of the processor operations (calls) the
-- changes make, and $19 whether a statement that carried the request may
-- have committed without answering (command.sentBefore).
-- Result rows: resultRow in store_postgres.go; a HELD row names its key
-- and no payment (the engine reads what it needs of that).
-- Plan: $1 is read through a sub-select, whose value the planner does not
-- see, so that a plan made for one request's arguments counts on as many
-- requests as the generic plan does and is estimated no cheaper: PostgreSQL
-- then keeps the generic plan instead of planning every statement again,
-- which for one request costs more than running it
-- (TestStatementsKeepGenericPlans).
WITH input AS (
	SELECT * FROM unnest((SELECT $1::text[]), $2::text[], $3::text[], $4::bytea[], $5::text[], $6::bool[], $7::text[],
	                     $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $18::text[], $19::bool[])
		WITH ORDINALITY AS t(operation, payment_id, idempotency_key, fingerprint, params, amount_given, reason,
		                     refund_id, transport, actor, actor_address, client_scope, op_id, sent_before, n)
),
-- snap: each request's payment as the snapshot shows it, the amount in the
-- payment's minor units, and whether something stops the request before its
-- key is looked at. A payment made at another processor than the sandbox,
-- the one processor whose answers this statement foresees, or with work in
-- flight at its processor (a pending capture or cancel, a reserved refund,
-- which a server configured for Stripe leaves on a sandbox payment too), is
-- stopped as well: the engine sends its request the phased way
-- (changes.go, foreseen in Go by foreseen).
snap AS (
	SELECT i.*, p.client_id, p.status, p.amount_minor, p.captured_minor, p.refunded_minor,
	       ($13::bigint[])[(i.n - 1) * $14 + c.digits + 1] AS minor,
	       p.processor <> 'sandbox' OR p.pending_operation IS NOT NULL OR p.reserved_minor > 0
	         OR i.client_scope NOT IN ('', p.client_id)
	         OR i.amount_given AND ($13::bigint[])[(i.n - 1) * $14 + c.digits + 1] IS NULL AS stopped
	FROM input i JOIN payments p ON p.id = i.payment_id JOIN currencies c ON c.code = p.currency
),
-- held: the keys the snapshot shows held in the payment's client's
-- namespace, and which of them are replays, as in create_batch. A replay's
-- key is the request's own payment's (the fingerprint covers the payment
-- id), which no other request of the statement is for. A key naming the
-- request's own operation was claimed by an earlier run of this statement
-- whose answer was lost: HELD, for decide to answer as applied. A replay
-- such a run recorded already ("recorded", as in create_batch, the attempt
-- naming the request by its operation id) is answered, not counted again.
held AS (
	SELECT s.*, k.id AS key_id, k.operation AS held_operation, k.params AS held_params,
	       k.fingerprint AS held_fingerprint, k.fingerprint_version AS held_version, k.created_at AS held_created_at,
	       k.payment_id AS held_payment_id, k.refund_id AS held_refund_id, k.processor_operation_id AS held_op_id,
	       k.fingerprint_version = $15 AND k.created_at >= $17 AND k.fingerprint = s.fingerprint
	         AND k.processor_operation_id IS DISTINCT FROM s.op_id AS replay,
	       s.sent_before AND EXISTS (SELECT 1 FROM idempotency_attempts a
	                                 WHERE a.payment_id = k.payment_id AND a.request_id = s.op_id) AS recorded
	FROM snap s JOIN idempotency_keys k ON k.client_id = s.client_id AND k.idempotency_key = s.idempotency_key
	WHERE NOT s.stopped
),
-- target: the requests whose key is new, with the amount each asks for:
-- the one given, or all that the snapshot shows available.
target AS (
	SELECT s.operation AS req_operation, s.payment_id AS req_payment_id,
	       CASE s.operation
	         WHEN 'CAPTURE_PAYMENT' THEN COALESCE(s.minor, s.amount_minor)
	         WHEN 'REFUND_PAYMENT' THEN COALESCE(s.minor, s.captured_minor - s.refunded_minor)
	         ELSE 0 END AS req_amount,
	       NOT s.amount_given AS req_all, true AS req_ready, $16::timestamptz AS req_now
	FROM snap s
	WHERE NOT s.stopped AND NOT EXISTS (SELECT 1 FROM held h WHERE h.n = s.n)
),
-- applied: the change, by the lifecycle's one conditional update.
applied AS (
{{apply_change}}
),
claim AS (
	INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params,
	                              payment_id, refund_id, created_at, processor_operation_id)
	SELECT s.client_id, s.idempotency_key, s.operation, s.fingerprint, $15, s.params, s.payment_id,
	       CASE WHEN s.operation = 'REFUND_PAYMENT' THEN s.refund_id END, $16, s.op_id
	FROM applied a JOIN snap s ON s.payment_id = a.id
),
refund AS (
	INSERT INTO refunds (id, payment_id, amount_minor, reason, idempotency_key, created_at)
	SELECT s.refund_id, s.payment_id, t.req_amount, s.reason, s.idempotency_key, $16
	FROM applied a JOIN snap s ON s.payment_id = a.id JOIN target t ON t.req_payment_id = a.id
	WHERE s.operation = 'REFUND_PAYMENT'
	RETURNING id, payment_id, amount_minor, reason, idempotency_key, created_at
),
-- applied_event: each applied change's event (PAYMENT_CAPTURED,
-- PAYMENT_CANCELED, PAYMENT_REFUNDED with its refund), written by this
-- statement and so committed with the change or not at all: the outbox
-- (events.go). It records the payment as "applied" returns it, right after
-- the change.
applied_event AS (
	INSERT INTO payment_events (type, at, idempotency_key, refund_id, payment_id, client_id, payment_key, amount_minor,
	                            currency, method, payment_created_at, status, captured_minor, refunded_minor, captured_at,
	                            canceled_at, replay_count, rejected_count)
	SELECT CASE s.operation WHEN 'CAPTURE_PAYMENT' THEN 'PAYMENT_CAPTURED' WHEN 'CANCEL_PAYMENT' THEN 'PAYMENT_CANCELED'
	         ELSE 'PAYMENT_REFUNDED' END,
	       $16, s.idempotency_key, CASE WHEN s.operation = 'REFUND_PAYMENT' THEN s.refund_id END,
	       a.id, a.client_id, a.idempotency_key, a.amount_minor, a.currency, a.method, a.created_at, a.status,
	       a.captured_minor, a.refunded_minor, a.captured_at, a.canceled_at, a.replay_count, a.rejected_count
	FROM applied a JOIN snap s ON s.payment_id = a.id
),
-- applied_attempt: each applied change's attempt, naming the operation
-- its call was made for (request_id): the sandbox answered that call
-- before the statement, so no processor_calls row repeats it;
-- processor_calls_of reads it from here (sql/by_payment.sql).
applied_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, refund_id,
	                                  transport, actor, actor_address, request_id)
	SELECT s.payment_id, s.operation, s.idempotency_key, 'APPLIED', $16, s.params,
	       CASE WHEN s.operation = 'REFUND_PAYMENT' THEN s.refund_id END, s.transport, s.actor, s.actor_address, s.op_id
	FROM applied a JOIN snap s ON s.payment_id = a.id
),
-- counted and replayed_attempt: each replay, counted on its payment and
-- recorded as create_batch records a replay.
counted AS (
	UPDATE payments p SET replay_count = p.replay_count + 1, replayed_at = COALESCE(p.replayed_at, $16)
	FROM held h
	WHERE h.replay AND NOT h.recorded AND p.id = h.held_payment_id
	RETURNING h.n, h.operation, h.idempotency_key AS key, h.params AS request_params, h.transport, h.actor,
	          h.actor_address, h.held_created_at, h.held_refund_id, h.op_id,
	          p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
	          p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token
),
replayed_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, refund_id,
	                                  transport, actor, actor_address, request_id)
	SELECT id, operation, key, 'REPLAYED', GREATEST($16::timestamptz, held_created_at + interval '1 microsecond'),
	       request_params, held_refund_id, transport, actor, actor_address, op_id
	FROM counted
)
SELECT s.n, 'APPLIED', a.id, a.client_id, a.idempotency_key, a.amount_minor, a.currency, a.method, a.created_at,
       a.status, a.captured_minor, a.refunded_minor, a.captured_at, a.canceled_at, a.replay_count, a.rejected_count, a.processor, a.processor_reference, a.decline_code, a.pending_operation, a.reserved_minor, a.payment_method_token,
       r.id, r.payment_id, r.amount_minor, r.reason, r.idempotency_key, r.created_at, NULL
FROM applied a JOIN snap s ON s.payment_id = a.id LEFT JOIN refund r ON r.payment_id = a.id
UNION ALL
SELECT c.n, 'REPLAYED', c.id, c.client_id, c.idempotency_key, c.amount_minor, c.currency, c.method, c.created_at,
       c.status, c.captured_minor, c.refunded_minor, c.captured_at, c.canceled_at, c.replay_count, c.rejected_count, c.processor, c.processor_reference, c.decline_code, c.pending_operation, c.reserved_minor, c.payment_method_token,
       r.id, r.payment_id, r.amount_minor, r.reason, r.idempotency_key, r.created_at, NULL
FROM counted c LEFT JOIN refunds r ON r.id = c.held_refund_id
UNION ALL
-- A replay an earlier run recorded and counted, its payment as this
-- statement's snapshot shows it.
SELECT h.n, 'REPLAYED', p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
       p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count,
       p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token,
       r.id, r.payment_id, r.amount_minor, r.reason, r.idempotency_key, r.created_at, NULL
FROM held h JOIN payments p ON p.id = h.held_payment_id LEFT JOIN refunds r ON r.id = h.held_refund_id
WHERE h.replay AND h.recorded
UNION ALL
-- A held key as one JSON text column (heldRow), as in create_batch.
SELECT h.n, 'HELD', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL,
       json_build_object('id', h.key_id, 'operation', h.held_operation, 'params', h.held_params,
                         'fingerprint', encode(h.held_fingerprint, 'hex'), 'version', h.held_version,
                         'created_at', h.held_created_at, 'payment_id', h.held_payment_id,
                         'refund_id', h.held_refund_id, 'operation_id', h.held_op_id)::text
FROM held h
WHERE NOT h.replay
UNION ALL
SELECT s.n, 'NOT_APPLIED', p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
       p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM snap s JOIN payments p ON p.id = s.payment_id
WHERE NOT EXISTS (SELECT 1 FROM held h WHERE h.n = s.n) AND NOT EXISTS (SELECT 1 FROM applied a WHERE a.id = s.payment_id)
UNION ALL
SELECT i.n, 'NOT_FOUND', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM snap s WHERE s.n = i.n)
