-- Statements of package webhooks that only SQLite runs: SQLite binds no
-- arrays, and has one writer at a time.

-- name: any_due
-- Whether a delivery is due at $1: looked at before taking the write lock,
-- which the one writer needs for payments.
SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at <= $1)

-- name: claim
-- Leases up to $4 deliveries due at $3 until $1 (when they fall due again
-- if this instance never records them) under the token $2. Inside a write
-- transaction nothing else claims meanwhile. Fair, as PostgreSQL's claim:
-- the endpoints of the JSON array $10 answered quickly last time and take
-- what is due; any other endpoint with $7 attempts in flight, or a client
-- with $8 such attempts, gets no more ($5 and $6 are JSON arrays of [id,
-- attempts in flight]); an endpoint with none in flight that is not in the
-- JSON array $11 (no answer last time) may still take one while its
-- client has fewer than $12; each client's oldest are taken in turn, the
-- oldest of each endpoint with none in flight first (those not in $11
-- before those in it), and only the $9 oldest due deliveries of endpoints and clients with
-- room are looked at.
WITH load_e AS (
	SELECT value ->> 0 AS id, value ->> 1 AS n FROM json_each($5)
), load_c AS (
	SELECT value ->> 0 AS id, value ->> 1 AS n FROM json_each($6)
), fast_e AS (
	SELECT value AS id FROM json_each($10)
), silent_e AS (
	SELECT value AS id FROM json_each($11)
), due AS (
	SELECT d.id, d.endpoint_id, w.client_id, d.next_attempt_at, f.id IS NOT NULL AS fast,
		COALESCE(le.n, 0) = 0 AS idle, s.id IS NOT NULL AS silent,
		COALESCE(le.n, 0) AS endpoint_load, COALESCE(lc.n, 0) AS client_load
	FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
	LEFT JOIN load_e le ON le.id = d.endpoint_id
	LEFT JOIN load_c lc ON lc.id = w.client_id
	LEFT JOIN fast_e f ON f.id = d.endpoint_id
	LEFT JOIN silent_e s ON s.id = d.endpoint_id
	WHERE d.status = 'PENDING' AND d.next_attempt_at <= $3
		AND (f.id IS NOT NULL OR COALESCE(le.n, 0) < $7 AND COALESCE(lc.n, 0) < $8
			OR COALESCE(le.n, 0) = 0 AND s.id IS NULL AND COALESCE(lc.n, 0) < $12)
	ORDER BY d.next_attempt_at LIMIT $9
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
)
UPDATE webhook_deliveries SET lease_until = $1, next_attempt_at = $1, claim_token = $2
WHERE id IN (SELECT id FROM ranked
             WHERE fast OR endpoint_load + by_endpoint <= $7 AND client_load + by_client <= $8
                OR first AND client_load + by_client <= $12
             ORDER BY turn, next_attempt_at LIMIT $4)

-- name: claimed
-- The deliveries claim leased under the token $1, with their endpoint,
-- whether their event's payment has any refund (made before the event or
-- since), which its body then reads (refunds_of), and the body stored when
-- it failed (a resent one sends it again).
SELECT d.id, d.event_id, d.event_seq, d.endpoint_id, d.retries, d.event_at, d.expires_at, w.url, w.secret, w.client_id,
	EXISTS (SELECT 1 FROM payment_events e JOIN refunds r ON r.payment_id = e.payment_id WHERE e.seq = d.event_seq),
	d.body
FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
WHERE d.claim_token = $1 AND d.status = 'PENDING'

-- name: record
-- Records one attempt's outcome on its delivery $7, only where its claim
-- still holds (the token $8 matches and it is still pending): the new
-- status $1, due at $2 after $3 failures in a row, the attempt's time $4,
-- HTTP status $5 and problem $6, when delivered ($9, or NULL), and the
-- body sent ($10) when it is recorded FAILED, for a resend (NULL leaves
-- the stored one).
UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, retries = $3,
	attempts = attempts + 1, lease_until = NULL, last_attempt_at = $4, last_status = $5, last_error = $6,
	delivered_at = COALESCE($9, delivered_at), body = COALESCE($10, body)
WHERE id = $7 AND claim_token = $8 AND status = 'PENDING'

-- name: add_attempt
-- Logs one attempt recorded on its delivery, for the admin's history.
INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms) VALUES ($1, $2, $3, $4, $5)

-- name: refunds_of
-- The refunds of the payments the JSON array $1 lists, oldest first by
-- payment, with what says what each was at an event's time
-- (payments.RefundAsOf); json_each reads the array.
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at, status, failure_code, settled_at,
	returned_at
FROM refunds WHERE payment_id IN (SELECT value FROM json_each($1))
ORDER BY created_at, id

-- name: lock_client_endpoints
-- Nothing to lock: the server's one SQLite connection runs one transaction
-- at a time, so count_client_endpoints holds until add_endpoint. ($1 is the
-- client, as on PostgreSQL.)
SELECT length($1)

-- name: deliveries_of
-- The deliveries the JSON array $1 lists (a page of the admin's list),
-- newest first, with their endpoint's URL and their event's type: read
-- from the stored body once the event is swept, '' without one. The last
-- column: neither body nor event is there, so a resend would have nothing
-- to send.
SELECT d.id, d.event_id, d.event_seq, d.endpoint_id, d.status, d.event_at, d.created_at, d.attempts, d.retries,
	d.next_attempt_at, d.expires_at, d.lease_until, d.claim_token, d.last_attempt_at, d.last_status, d.last_error,
	d.delivered_at, COALESCE(e.type, json_extract(d.body, '$.type'), ''), w.url, d.payment_id, d.client_id,
	d.body IS NULL AND e.seq IS NULL
FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
LEFT JOIN payment_events e ON e.seq = d.event_seq
WHERE d.id IN (SELECT value FROM json_each($1))
ORDER BY d.id DESC

-- name: attempts_of
-- The attempts of the deliveries the JSON array $1 lists, oldest first, by
-- idx_webhook_attempts_delivery.
SELECT id, delivery_id, at, status, error, duration_ms
FROM webhook_attempts WHERE delivery_id IN (SELECT value FROM json_each($1))
ORDER BY id
