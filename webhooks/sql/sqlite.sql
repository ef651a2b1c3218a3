-- Statements of package webhooks that only SQLite runs: SQLite binds no
-- arrays, and has one writer at a time.

-- name: any_due
-- Whether a delivery is due at $1: looked at before taking the write lock,
-- which the one writer needs for payments.
SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at <= $1)

-- name: claim
-- Leases up to $4 deliveries due at $3 until $1 (when they fall due again
-- if this instance never records them) under the token $2. Inside a write
-- transaction nothing else claims meanwhile.
UPDATE webhook_deliveries SET lease_until = $1, next_attempt_at = $1, claim_token = $2
WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at <= $3
             ORDER BY next_attempt_at LIMIT $4)

-- name: claimed
-- The deliveries claim leased under the token $1, with their endpoint.
SELECT d.id, d.event_id, d.event_seq, d.endpoint_id, d.retries, d.event_at, d.expires_at, w.url, w.secret
FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
WHERE d.claim_token = $1 AND d.status = 'PENDING'

-- name: record
-- Records one attempt's outcome on its delivery $7, only where its claim
-- still holds (the token $8 matches and it is still pending): the new
-- status $1, due at $2 after $3 failures in a row, the attempt's time $4,
-- HTTP status $5 and problem $6, and when delivered ($9, or NULL).
UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, retries = $3,
	attempts = attempts + 1, lease_until = NULL, last_attempt_at = $4, last_status = $5, last_error = $6,
	delivered_at = COALESCE($9, delivered_at)
WHERE id = $7 AND claim_token = $8 AND status = 'PENDING'

-- name: add_attempt
-- Logs one attempt recorded on its delivery, for the admin's history.
INSERT INTO webhook_attempts (delivery_id, at, status, error, duration_ms) VALUES ($1, $2, $3, $4, $5)

-- name: refunds_of
-- The refunds of the payments the JSON array $1 lists, oldest first by
-- payment; json_each reads the array.
SELECT id, payment_id, amount_minor, reason, idempotency_key, created_at
FROM refunds WHERE payment_id IN (SELECT value FROM json_each($1))
ORDER BY created_at, id

-- name: lock_client_endpoints
-- Nothing to lock: the server's one SQLite connection runs one transaction
-- at a time, so count_client_endpoints holds until add_endpoint. ($1 is the
-- client, as on PostgreSQL.)
SELECT length($1)
