-- Statements of package webhooks that only PostgreSQL runs: those that
-- take arrays, and the claim, where instances compete.

-- name: claim
-- Takes up to $2 deliveries due at $1 that no other transaction holds
-- (SKIP LOCKED: two instances never claim the same one), leases them until
-- $3 (when they fall due again if this instance never records them) under
-- the token $4, and returns them, by id, with their endpoint and whether
-- their event's payment has any refund (made before the event or since),
-- which its body then reads (refunds_of), and the body stored when it
-- failed (a resent one sends it again). Fair: the endpoints $12
-- answered quickly last time and take what is due; any other endpoint
-- with $8 attempts in flight on this instance, or a client with $9 such
-- attempts, gets no more ($5/$6 and $10/$11 list them). An endpoint with
-- none in flight that is not in $13 (no answer last time) may still take
-- one while its client has fewer than $14, so that its hanging siblings
-- cannot keep it from showing it is healthy. The batch takes each
-- client's oldest in turn, the oldest of each endpoint with none in flight first
-- (those not in $13 before those in it), so that slow endpoints cannot
-- take every slot. Only the $7 oldest
-- due deliveries of endpoints and clients with room are looked at, and the
-- chosen ones are then found by id (= ANY of an array: a join let the
-- planner scan every delivery twice), and their payments' refunds looked
-- for by payment, one row at most each (LATERAL: an EXISTS may be planned
-- as a hash of every event's). Run planned for its arguments every time: a
-- cached generic plan might scan every delivery ever made.
WITH load_e AS (
	SELECT * FROM unnest($5::text[], $6::int[]) AS t(id, n)
), load_c AS (
	SELECT * FROM unnest($10::text[], $11::int[]) AS t(id, n)
), due AS (
	SELECT d.id, d.endpoint_id, w.client_id, d.next_attempt_at, d.endpoint_id = ANY($12::text[]) AS fast,
		COALESCE(le.n, 0) = 0 AS idle, d.endpoint_id = ANY($13::text[]) AS silent,
		COALESCE(le.n, 0) AS endpoint_load, COALESCE(lc.n, 0) AS client_load
	FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
	LEFT JOIN load_e le ON le.id = d.endpoint_id
	LEFT JOIN load_c lc ON lc.id = w.client_id
	WHERE d.status = 'PENDING' AND d.next_attempt_at <= $1
		AND (d.endpoint_id = ANY($12::text[]) OR COALESCE(le.n, 0) < $8 AND COALESCE(lc.n, 0) < $9
			OR COALESCE(le.n, 0) = 0 AND NOT d.endpoint_id = ANY($13::text[]) AND COALESCE(lc.n, 0) < $14)
	ORDER BY d.next_attempt_at LIMIT $7
), by_endpoint AS (
	SELECT *, row_number() OVER (PARTITION BY endpoint_id ORDER BY next_attempt_at, id) AS by_endpoint
	FROM due
), firsts AS (
	SELECT *, idle AND by_endpoint = 1 AS idle_first, idle AND by_endpoint = 1 AND NOT silent AS first
	FROM by_endpoint
), ranked AS (
	SELECT id, next_attempt_at, fast, endpoint_load, client_load, by_endpoint, first,
		row_number() OVER (PARTITION BY client_id, fast ORDER BY first DESC, idle_first DESC, next_attempt_at, id) AS by_client,
		row_number() OVER (PARTITION BY client_id ORDER BY first DESC, idle_first DESC, next_attempt_at, id) AS turn
	FROM firsts
), fair AS (
	SELECT id FROM ranked
	WHERE fast OR endpoint_load + by_endpoint <= $8 AND client_load + by_client <= $9
		OR first AND client_load + by_client <= $14
	ORDER BY turn, next_attempt_at LIMIT $2
), locked AS (
	SELECT d.id FROM webhook_deliveries d
	WHERE d.id = ANY (ARRAY(SELECT id FROM fair)) AND d.status = 'PENDING' AND d.next_attempt_at <= $1
	FOR UPDATE OF d SKIP LOCKED
), claimed AS (
	UPDATE webhook_deliveries d SET lease_until = $3, next_attempt_at = $3, claim_token = $4
	WHERE d.id = ANY (ARRAY(SELECT id FROM locked))
	RETURNING d.id, d.event_id, d.event_seq, d.endpoint_id, d.retries, d.event_at, d.expires_at, d.body
)
SELECT c.id, c.event_id, c.event_seq, c.endpoint_id, c.retries, c.event_at, c.expires_at, w.url, w.secret, w.client_id,
	COALESCE(f.refunded, false), c.body
FROM claimed c JOIN webhook_endpoints w ON w.id = c.endpoint_id
LEFT JOIN payment_events e ON e.seq = c.event_seq
LEFT JOIN LATERAL (SELECT true AS refunded FROM refunds r WHERE r.payment_id = e.payment_id LIMIT 1) f ON true
ORDER BY c.id

-- name: record
-- Records a batch of attempts, one per index of the arrays $1..$11: each
-- delivery's new state, only where its claim still holds (the token
-- matches and it is still pending), and an attempt row for each one
-- recorded. A body in $11 (one recorded FAILED) is stored for a resend;
-- NULL leaves the stored one. One statement for the whole batch.
WITH r AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::timestamptz[], $5::int[], $6::int[], $7::text[],
	                     $8::timestamptz[], $9::bigint[], $10::bool[], $11::text[])
		AS t(id, token, status, next, retries, code, problem, at, took_ms, ok, body)
), done AS (
	UPDATE webhook_deliveries d SET status = r.status, next_attempt_at = r.next, retries = r.retries,
		attempts = d.attempts + 1, lease_until = NULL, last_attempt_at = r.at, last_status = r.code,
		last_error = r.problem, delivered_at = CASE WHEN r.ok THEN r.at ELSE d.delivered_at END,
		body = COALESCE(r.body, d.body)
	FROM r WHERE d.id = r.id AND d.claim_token = r.token AND d.status = 'PENDING'
	RETURNING d.id
)
INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms)
SELECT r.id, r.at, r.code, r.problem, r.took_ms FROM r JOIN done ON done.id = r.id

-- name: refunds_of
-- The refunds of the payments $1 lists, oldest first by payment, with
-- what says what each was at an event's time (payments.RefundAsOf).
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at, status, failure_code, settled_at,
	returned_at
FROM refunds WHERE payment_id = ANY($1::text[])
ORDER BY created_at, id

-- name: lock_client_endpoints
-- Serialises the creation of the client $1's endpoints until the end of
-- the transaction, so that count_client_endpoints holds until add_endpoint.
SELECT pg_advisory_xact_lock(hashtextextended('cmpay.webhook_endpoints:' || $1, 0))

-- name: deliveries_of
-- The deliveries the array $1 lists (a page of the admin's list), newest
-- first, with their endpoint's URL and their event's type: read from the
-- stored body once the event is swept, '' without one. COALESCE reads the
-- body only then. The last column: neither body nor event is there, so a
-- resend would have nothing to send.
SELECT d.id, d.event_id, d.event_seq, d.endpoint_id, d.status, d.event_at, d.created_at, d.attempts, d.retries,
	d.next_attempt_at, d.expires_at, d.lease_until, d.claim_token, d.last_attempt_at, d.last_status, d.last_error,
	d.delivered_at, COALESCE(e.type, d.body::json ->> 'type', ''), w.url, d.payment_id, d.client_id,
	d.body IS NULL AND e.seq IS NULL
FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
LEFT JOIN payment_events e ON e.seq = d.event_seq
WHERE d.id = ANY($1::bigint[])
ORDER BY d.id DESC

-- name: attempts_of
-- The attempts of the deliveries the array $1 lists, oldest first, by
-- idx_webhook_attempts_delivery.
SELECT id, delivery_id, at, status, error, duration_ms
FROM webhook_attempts WHERE delivery_id = ANY($1::bigint[])
ORDER BY id
