-- name: create_batch
-- createPayment for a batch of requests, in one statement and so one round
-- trip and one commit (group commit: batch.go). PostgreSQL.
--
-- Data-modifying CTEs claim each request's key under the unique index and
-- create its payment, or find the key held. Of a held key of the current
-- version, not expired, the statement settles the two common verdicts
-- itself: the same fingerprint is a replay; another create's key with
-- another fingerprint is a rejection (IDEMPOTENCY_KEY_REUSED, the held key
-- returned for Go to name the fields that differ). Those are decide's
-- rules for such a key (decide.go), written in SQL because each saves a
-- round trip and a second statement per request;
-- TestBatchStatementsAgreeWithDecide checks that the two agree. Every other
-- held key (an older version, one past its TTL, a capture's, cancel's or
-- refund's key, the request's own from a run whose answer was lost) comes
-- back HELD for decide to judge.
--
-- Every CTE reads the snapshot the statement started with. A request that
-- loses a race waits inside "claim" for the winner to commit, but the
-- winner's key is not in the snapshot, so "held" finds nothing and the
-- statement returns no row for it: the engine sends it again, with a fresh
-- snapshot that sees the key. A race costs one round trip more and is never
-- mistaken for anything else.
--
-- Parameters, one array element per request: $1 client ids, $2 keys,
-- $3 fingerprints, $4 canonical params, $5 ids for new payments, $6 amounts
-- in minor units, $7 currencies, $8 methods, $9 capture (false: authorize
-- only), $10 transports, $11 actors, $12 actor addresses. Then $13 the
-- fingerprint version, $14 now, $15 expired-before (now less the TTL).
-- The processor (operations.go: createPlan): $16 the status each payment
-- starts in (the foreseen answer, or PROCESSING), $17 the processor's
-- name, $18 references, $19 decline codes, $20 payment method tokens,
-- $21 operation ids, $22 operation states (SUCCEEDED or DECLINED: the
-- answer foreseen, stored with the payment; PENDING: an operation leased
-- to the request, which asks next), $23 the operations' requests (JSON);
-- then $24 the lease's owner, $25 its end, $26 when an operation left
-- unsettled is first due for recovery; $27, one per request, whether a
-- statement that carried it may have committed without answering
-- (command.sentBefore).
-- Result rows (resultRow in store_postgres.go, without its refund
-- columns): the request's position, its outcome, the payment (of a
-- REPLAYED or REJECTED row) and the held key (of a HELD or REJECTED row,
-- as JSON: heldRow). A
-- CREATED row names its request and nothing else: Go builds the payment
-- (createdPayment). Every column of the result, and of a CTE, costs
-- PostgreSQL some work in each execution, however few rows pass: the
-- statement keeps them to what is read.
-- Plan: $1 is read through a sub-select, whose value the planner does not
-- see, so that a plan made for one request's arguments counts on as many
-- requests as the generic plan does and is estimated no cheaper: PostgreSQL
-- then keeps the generic plan instead of planning every statement again,
-- which for one request costs more than running it
-- (TestStatementsKeepGenericPlans).
WITH input AS (
	SELECT * FROM unnest((SELECT $1::text[]), $2::text[], $3::bytea[], $4::text[], $5::text[], $6::bigint[], $7::text[],
	                     $8::text[], $9::bool[], $10::text[], $11::text[], $12::text[], $16::text[], $18::text[],
	                     $19::text[], $20::text[], $21::text[], $22::text[], $23::text[], $27::bool[])
		WITH ORDINALITY AS t(client_id, idempotency_key, fingerprint, params, payment_id, amount_minor, currency,
		                     method, capture, transport, actor, actor_address, status, reference, decline_code, token,
		                     op_id, op_state, op_request, sent_before, n)
),
-- claim: each request's key, unless its client holds it. ON CONFLICT DO
-- NOTHING waits for a transaction inserting the same key and skips the row
-- once that commits: the loser never meets a unique violation, and a replay
-- neither locks nor writes the key row.
claim AS (
	INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params,
	                              payment_id, created_at)
	SELECT client_id, idempotency_key, 'CREATE_PAYMENT', fingerprint, $13, params, payment_id, $14
	FROM input ORDER BY n
	ON CONFLICT (client_id, idempotency_key) DO NOTHING
	RETURNING payment_id
),
-- claimed: the requests whose key this statement claimed, with what their
-- payment starts with: the status given, captured in full when CAPTURED
-- (createdPayment in steps.go says the same in Go), and the event it
-- announces (none while PROCESSING).
claimed AS (
	SELECT i.*, CASE WHEN i.status = 'CAPTURED' THEN i.amount_minor ELSE 0 END AS captured_minor,
	       CASE WHEN i.status = 'CAPTURED' THEN $14::timestamptz END AS captured_at,
	       CASE i.status WHEN 'DECLINED' THEN 'PAYMENT_DECLINED' WHEN 'PENDING' THEN 'PAYMENT_PENDING'
	         WHEN 'PROCESSING' THEN NULL ELSE 'PAYMENT_CREATED' END AS event_type
	FROM claim c JOIN input i ON i.payment_id = c.payment_id
),
-- created: the payment of each claimed key. Nothing is returned: the
-- payment is exactly what the request and $14 say, and Go builds the
-- answer from them (createdPayment), which spares reading 14 columns back
-- per create. create_foreseen: see "operation".
created AS (
	INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
	                      status, captured_minor, captured_at, refunded_minor, replay_count, rejected_count,
	                      processor, processor_reference, decline_code, payment_method_token, reserved_minor,
	                      create_foreseen)
	SELECT payment_id, client_id, idempotency_key, amount_minor, currency, method, $14,
	       status, captured_minor, captured_at, 0, 0, 0, $17, reference, decline_code, token, 0,
	       op_state <> 'PENDING'
	FROM claimed
),
-- operation: the processor operation of each payment whose processor is
-- asked next, leased to the request that asks. A foreseen answer stores
-- none: the payment is marked create_foreseen and its one call read from
-- it (processor_calls_of; createPlan.storesOperation says the same in Go).
operation AS (
	INSERT INTO processor_operations (id, payment_id, operation, processor, key, amount_minor, currency, request,
	                                  state, code, sends, lease_owner, lease_until, next_try_at, created_at,
	                                  last_send_at)
	SELECT op_id, payment_id, 'CREATE_PAYMENT', $17, 'cmpay_' || op_id, amount_minor, currency, op_request,
	       op_state, NULL, 0, $24, $25, $26, $14, $14
	FROM claimed WHERE op_state = 'PENDING'
),
-- created_event: each created payment's PAYMENT_CREATED event, written by
-- this statement and so committed with the payment or not at all: the
-- outbox (events.go). It records the payment as "created" writes it.
created_event AS (
	INSERT INTO payment_events (type, at, idempotency_key, payment_id, client_id, payment_key, amount_minor, currency,
	                            method, payment_created_at, status, captured_minor, refunded_minor, captured_at,
	                            canceled_at, replay_count, rejected_count)
	SELECT event_type, $14, idempotency_key, payment_id, client_id, idempotency_key, amount_minor, currency,
	       method, $14, status, captured_minor, 0, captured_at, NULL, 0, 0
	FROM claimed WHERE event_type IS NOT NULL
),
created_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport, actor, actor_address)
	SELECT payment_id, 'CREATE_PAYMENT', idempotency_key, 'CREATED', $14, params, transport, actor, actor_address
	FROM claimed
),
-- held: the keys the snapshot shows already held, with what of each
-- request the later steps read. "replay" and "reject" mark the held keys
-- this statement settles: current version, not expired, and the same
-- fingerprint, or a create's key with another. A key naming the request's
-- own new payment was claimed by an earlier run of this statement whose
-- answer was lost: no replay, but HELD, for decide to answer as created.
-- "recorded" marks a replay or rejection such a run recorded already: its
-- attempt names the request (its new payment id, unused), and is looked
-- for only when the request was sent before.
-- The key of every held row but a replay's is returned as one JSON text
-- column (heldRow): rare in an answer, and one column instead of eight is
-- less for PostgreSQL to set up in every execution, whatever its rows.
held AS (
	SELECT h.*, CASE WHEN NOT h.replay THEN
	         json_build_object('id', h.key_id, 'operation', h.held_operation, 'params', h.held_params,
	                           'fingerprint', encode(h.held_fingerprint, 'hex'), 'version', h.held_version,
	                           'created_at', h.held_created_at, 'payment_id', h.held_payment_id)::text
	       END AS held_key
	FROM (
		SELECT i.n, i.payment_id AS request_id, i.idempotency_key, i.params, i.transport, i.actor, i.actor_address,
		       i.sent_before AND EXISTS (SELECT 1 FROM idempotency_attempts a
		                                 WHERE a.payment_id = k.payment_id AND a.request_id = i.payment_id) AS recorded,
		       k.id AS key_id, k.operation AS held_operation, k.params AS held_params, k.fingerprint AS held_fingerprint,
		       k.fingerprint_version AS held_version, k.created_at AS held_created_at, k.payment_id AS held_payment_id,
		       k.fingerprint_version = $13 AND k.created_at >= $15 AND k.fingerprint = i.fingerprint
		         AND k.payment_id <> i.payment_id AS replay,
		       k.fingerprint_version = $13 AND k.created_at >= $15 AND k.fingerprint <> i.fingerprint
		         AND k.operation = 'CREATE_PAYMENT' AS reject
		FROM input i JOIN idempotency_keys k ON k.client_id = i.client_id AND k.idempotency_key = i.idempotency_key
		WHERE NOT EXISTS (SELECT 1 FROM claim c WHERE c.payment_id = i.payment_id)
	) h
),
-- counted: each replay or rejection, counted on the payment its key
-- created; the first of each kind also stamps it
-- (models.Payment.ReplayedAt, RejectedAt). Both keys are creates' (a
-- replay's fingerprint says so; "reject" asks it), and a create's key
-- belongs to the one payment it created, so no two requests of one
-- statement count on one payment, which a statement may update only once.
-- A rejection's time is its attempt's, as record_batch stamps it.
counted AS (
	UPDATE payments p SET
		replay_count = p.replay_count + CASE WHEN h.replay THEN 1 ELSE 0 END,
		replayed_at = CASE WHEN h.replay THEN COALESCE(p.replayed_at, $14) ELSE p.replayed_at END,
		rejected_count = p.rejected_count + CASE WHEN h.replay THEN 0 ELSE 1 END,
		rejected_at = CASE WHEN h.replay THEN p.rejected_at
		              ELSE COALESCE(p.rejected_at, GREATEST($14::timestamptz, h.held_created_at + interval '1 microsecond')) END
	FROM held h
	WHERE (h.replay OR h.reject) AND NOT h.recorded AND p.id = h.held_payment_id
	RETURNING h.n, h.replay, h.held_key, h.idempotency_key AS key, h.params AS request_params, h.held_params,
	          h.transport, h.actor, h.actor_address, h.held_created_at, h.request_id,
	          p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
	          p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token
),
-- counted_attempt: each replay or rejection, at the statement's time or,
-- if that is earlier, just after the key's first use. The statement's time
-- is read before it is sent: a request that waited for its turn while
-- another one used the key and committed would otherwise be recorded
-- before the very use it replays (notBefore in steps.go does the same in
-- Go). A rejection keeps the key's params, as record_batch writes it. Only
-- where the payment was counted: a key whose payment is missing (a damaged
-- database) records nothing here; a replay's returns no row, and the
-- request fails, a rejection's comes back HELD (below).
counted_attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, held_params,
	                                  transport, actor, actor_address, request_id)
	SELECT id, 'CREATE_PAYMENT', key, CASE WHEN replay THEN 'REPLAYED' ELSE 'REJECTED' END,
	       GREATEST($14::timestamptz, held_created_at + interval '1 microsecond'),
	       request_params, CASE WHEN replay THEN NULL ELSE held_params END, transport, actor, actor_address, request_id
	FROM counted
)
SELECT n, 'CREATED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM claimed
UNION ALL
-- A replay or rejection brings its payment as counted; a rejection, the
-- key too, for the fields that differ.
SELECT n, CASE WHEN replay THEN 'REPLAYED' ELSE 'REJECTED' END, id, client_id, idempotency_key, amount_minor, currency,
       method, created_at, status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count,
       rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor,
       payment_method_token, held_key
FROM counted
UNION ALL
-- One an earlier run recorded and counted, its payment as this statement's
-- snapshot shows it.
SELECT h.n, CASE WHEN h.replay THEN 'REPLAYED' ELSE 'REJECTED' END, p.id, p.client_id, p.idempotency_key,
       p.amount_minor, p.currency, p.method, p.created_at, p.status, p.captured_minor, p.refunded_minor, p.captured_at,
       p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code,
       p.pending_operation, p.reserved_minor, p.payment_method_token, h.held_key
FROM held h JOIN payments p ON p.id = h.held_payment_id
WHERE (h.replay OR h.reject) AND h.recorded
UNION ALL
-- A rejection whose payment is missing (a damaged database) comes back
-- HELD: the engine's record of it then fails, saying so.
SELECT n, 'HELD', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       held_key
FROM held h
WHERE NOT replay AND (NOT reject OR NOT recorded AND NOT EXISTS (SELECT 1 FROM counted c WHERE c.n = h.n))
