-- PostgreSQL's own statements (store_postgres.go), beside the two batch
-- statements in create_batch.sql and change_batch.sql.

-- name: record_batch
-- Records the replays, rejections and refusals the engine decided after
-- batch statements (engine.go), a batch of them in one statement, so one
-- round trip and one commit, as create_batch does for claims: counts each
-- replay or rejection on its payment (the first of each also stamps it:
-- models.Payment.ReplayedAt), writes each attempt, and returns each
-- payment as it is now and, for a replayed refund, its refund. The batch
-- holds one request per payment (recordJob.batchKeys): a statement may
-- update a row only once. An attempt is written from the payment row it
-- found: a request whose payment is missing (a damaged database) writes
-- nothing and gets no row, and fails. Each attempt names its request; one
-- sent before whose attempt is there already (a run of this statement that
-- committed without answering wrote it) is answered, not recorded or
-- counted again.
-- Parameters, one array element per request: $1 payment ids, $2
-- operations, $3 keys, $4 outcomes (REPLAYED, REJECTED or REFUSED), $5
-- times, $6 params, $7 the held keys' params (a rejection's), $8 refusals
-- (the rule that refused), $9 refund ids (a replayed refund's), $10
-- transports, $11 actors, $12 actor addresses, $13 request ids
-- (command.requestID), $14 whether each was sent before
-- (command.sentBefore). Result rows: the request's position, the payment's
-- columns and the refund's, as change_batch's.
-- Plan: $1 is read through a sub-select, whose value the planner does not
-- see, so that a plan made for one request's arguments counts on as many
-- requests as the generic plan does and is estimated no cheaper: PostgreSQL
-- then keeps the generic plan instead of planning every statement again,
-- which for one request costs more than running it
-- (TestStatementsKeepGenericPlans).
WITH given AS (
	SELECT * FROM unnest((SELECT $1::text[]), $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[],
	                     $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bool[])
		WITH ORDINALITY AS t(payment_id, operation, idempotency_key, outcome, at, params, held_params, refusal, refund_id,
		                     transport, actor, actor_address, request_id, sent_before, n)
),
-- input: the requests to record now; recorded: those recorded already.
recorded AS (
	SELECT g.* FROM given g
	WHERE g.sent_before
	  AND EXISTS (SELECT 1 FROM idempotency_attempts a WHERE a.payment_id = g.payment_id AND a.request_id = g.request_id)
),
input AS (
	SELECT g.* FROM given g WHERE NOT EXISTS (SELECT 1 FROM recorded r WHERE r.n = g.n)
),
counted AS (
	UPDATE payments p SET
		replay_count = p.replay_count + CASE WHEN i.outcome = 'REPLAYED' THEN 1 ELSE 0 END,
		replayed_at = CASE WHEN i.outcome = 'REPLAYED' THEN COALESCE(p.replayed_at, i.at) ELSE p.replayed_at END,
		rejected_count = p.rejected_count + CASE WHEN i.outcome = 'REJECTED' THEN 1 ELSE 0 END,
		rejected_at = CASE WHEN i.outcome = 'REJECTED' THEN COALESCE(p.rejected_at, i.at) ELSE p.rejected_at END
	FROM input i
	WHERE p.id = i.payment_id AND i.outcome IN ('REPLAYED', 'REJECTED')
	RETURNING i.n, p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
	          p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token
),
-- as_is: the payment, unchanged, of a refused request (a refusal changes
-- nothing) and of one recorded already.
as_is AS (
	SELECT g.n, p.id, p.client_id, p.idempotency_key, p.amount_minor, p.currency, p.method, p.created_at,
	       p.status, p.captured_minor, p.refunded_minor, p.captured_at, p.canceled_at, p.replay_count, p.rejected_count, p.processor, p.processor_reference, p.decline_code, p.pending_operation, p.reserved_minor, p.payment_method_token
	FROM given g JOIN payments p ON p.id = g.payment_id
	WHERE g.outcome = 'REFUSED' OR EXISTS (SELECT 1 FROM recorded r WHERE r.n = g.n)
),
-- payment: every request's payment, counted or as it is.
payment AS (
	SELECT * FROM counted
	UNION ALL
	SELECT * FROM as_is
),
attempt AS (
	INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, held_params,
	                                  refusal, refund_id, transport, actor, actor_address, request_id)
	SELECT i.payment_id, i.operation, i.idempotency_key, i.outcome, i.at, i.params, i.held_params, i.refusal, i.refund_id,
	       i.transport, i.actor, i.actor_address, i.request_id
	FROM input i JOIN payment p ON p.n = i.n
)
SELECT p.*, r.id, r.payment_id, r.amount_minor, r.reason, r.idempotency_key, r.created_at
FROM payment p JOIN given i ON i.n = p.n LEFT JOIN refunds r ON r.id = i.refund_id

-- name: attempt_counts
-- Counts the attempts made since $1 by hour (hours since the Unix epoch)
-- and outcome, reading the attempts' time index over that window only
-- (RecentStats).
SELECT CAST(floor(extract(epoch FROM at) / 3600) AS bigint) AS hour, outcome, count(*) AS n
FROM idempotency_attempts WHERE at >= $1 GROUP BY 1, 2

-- name: sweep_keys
-- Deletes up to $2 keys created before $1 (SweepExpiredKeys), but not the
-- keys of a payment with work in flight at its processor. It skips rows
-- other transactions hold (a request forgetting an expired key, another
-- instance's sweep), and checks each row's age again as it deletes it, so
-- that a key renewed in between survives.
DELETE FROM idempotency_keys WHERE created_at < $1 AND id IN
	(SELECT k.id FROM idempotency_keys k
	 WHERE k.created_at < $1
	   AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.id = k.payment_id AND {{payment_in_flight}})
	 LIMIT $2 FOR UPDATE OF k SKIP LOCKED)

-- name: claim_due
-- Leases to $1 until $2 up to $4 unsettled processor operations due at $3
-- whose lease, if any, has run out (recovery.go), through the partial
-- index on next_try_at; only those at the processors $5 and $6, which this
-- instance can call: the others wait for an instance that can. SKIP
-- LOCKED: operations another instance is claiming at this moment are left
-- to it rather than waited for; the lease it writes then keeps them from
-- everyone else.
UPDATE processor_operations SET lease_owner = $1, lease_until = $2
WHERE id IN (SELECT id FROM processor_operations
             WHERE settled_at IS NULL AND next_try_at <= $3 AND (lease_until IS NULL OR lease_until < $3)
               AND processor IN ($5, $6)
             ORDER BY next_try_at LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING id

-- name: claim_authorizations
-- Claims up to $4 AUTHORIZED payments at processor $3 with nothing
-- pending, and a reference there to read them by, whose read is due by
-- $2 (their last read, or their creation, that long ago), the longest
-- due first, through the partial index idx_payments_auth_check on the
-- due time: it stamps each with $1, which keeps every instance from
-- claiming it again until its read is done or a retry's time has passed.
-- SKIP LOCKED: a payment another instance is claiming, or a request is
-- changing, is left to it rather than waited for. The index's own
-- conditions are repeated so that the planner uses it.
UPDATE payments SET auth_checked_at = $1
WHERE id IN (SELECT id FROM payments
             WHERE status = 'AUTHORIZED' AND processor <> 'sandbox'
               AND COALESCE(auth_checked_at, created_at) <= $2
               AND processor = $3 AND pending_operation IS NULL AND processor_reference IS NOT NULL
             ORDER BY COALESCE(auth_checked_at, created_at) LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING id

-- name: lock_payment
-- Reads payment $1 and locks its row until the transaction ends: a
-- capture, cancel or refund sent to a processor (changes.go) checks the
-- rules and stores its operation under this lock.
SELECT id, client_id, idempotency_key, amount_minor, currency, method, created_at,
       status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count, processor, processor_reference, decline_code, pending_operation, reserved_minor, payment_method_token
FROM payments WHERE id = $1 FOR UPDATE

-- name: in_payment_ids
-- "Is one of the payment ids in the array $1", completing a WHERE on a
-- payment id (by_payment.sql).
= ANY($1::text[])
