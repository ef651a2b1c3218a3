-- Statements of package webhooks that PostgreSQL and SQLite run as written.

-- name: count_client_endpoints
-- How many endpoints not deleted the client $1 has ('' for endpoints of no
-- client). Run after lock_client_endpoints, in its transaction, so that
-- the count holds until add_endpoint.
SELECT count(*) FROM webhook_endpoints WHERE client_id = $1 AND deleted_at IS NULL

-- name: add_endpoint
-- Stores a new endpoint.
INSERT INTO webhook_endpoints (id, url, secret, event_types, client_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: endpoints
-- The endpoints not deleted, of the client $1, or of every client when $2
-- is 1, oldest first. Their secrets stay in the database: listing never
-- shows them.
SELECT id, url, event_types, client_id, created_at, deleted_at
FROM webhook_endpoints
WHERE deleted_at IS NULL AND (client_id = $1 OR $2 = 1)
ORDER BY created_at, id

-- name: all_endpoints
-- The newest $1 endpoints, deleted ones too, without their secrets: the
-- admin's view.
SELECT id, url, event_types, client_id, created_at, deleted_at
FROM webhook_endpoints
ORDER BY created_at DESC, id DESC
LIMIT $1

-- name: delete_endpoint
-- Stamps the endpoint $1 deleted at $3, if it is not already and the client
-- $2 owns it (any client when $4 is 1). Its row stays, for the admin to
-- see its deliveries.
UPDATE webhook_endpoints SET deleted_at = $3
WHERE id = $1 AND deleted_at IS NULL AND (client_id = $2 OR $4 = 1)

-- name: live_endpoint
-- 1 when the endpoint $1 exists and is not deleted, whoever owns it; 0
-- otherwise. Run after a delete_endpoint that changed nothing, to tell
-- another owner's endpoint from none.
SELECT count(*) FROM webhook_endpoints WHERE id = $1 AND deleted_at IS NULL

-- name: cancel_endpoint_deliveries
-- Cancels the deliveries of the deleted endpoint $1 that were still to be
-- made or could be resent, in delete_endpoint's transaction.
UPDATE webhook_deliveries SET status = 'CANCELED', lease_until = NULL
WHERE endpoint_id = $1 AND status IN ('PENDING', 'FAILED')

-- name: rearm_delivery
-- Arms the delivery $1 again with a fresh schedule of retries, due at $2
-- and retried until $3, only if it is still FAILED: one conditional update,
-- so a second resend (or a second instance) changes nothing.
UPDATE webhook_deliveries
SET status = 'PENDING', retries = 0, next_attempt_at = $2, expires_at = $3, lease_until = NULL
WHERE id = $1 AND status = 'FAILED'

-- name: recent_deliveries
-- The newest $1 deliveries, newest first, with their endpoint's URL and
-- their event's type and payment ('' once the event is swept).
SELECT d.id, d.event_id, d.event_seq, d.endpoint_id, d.status, d.event_at, d.created_at, d.attempts, d.retries,
	d.next_attempt_at, d.expires_at, d.lease_until, d.claim_token, d.last_attempt_at, d.last_status, d.last_error,
	d.delivered_at, COALESCE(e.type, ''), w.url, COALESCE(e.payment_id, '')
FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
LEFT JOIN payment_events e ON e.seq = d.event_seq
ORDER BY d.id DESC LIMIT $1

-- name: delivery_attempts
-- The attempts of the deliveries with $1 <= id <= $2, oldest first: those
-- of recent_deliveries' list, and perhaps a few of deliveries created since,
-- which the caller leaves out.
SELECT id, delivery_id, at, status, error, duration_ms
FROM webhook_attempts WHERE delivery_id >= $1 AND delivery_id <= $2
ORDER BY id

-- name: backlog
-- How many deliveries are still to be made: neither delivered nor given up.
SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING'

-- name: endpoint_secrets
-- Every endpoint's id and stored secret, deleted ones too, for sealing
-- them under the current key.
SELECT id, secret FROM webhook_endpoints ORDER BY id

-- name: replace_secret
-- Replaces the endpoint $1's secret with $3 only if it still holds $2, so
-- that instances sealing at once do not undo each other's work.
UPDATE webhook_endpoints SET secret = $3 WHERE id = $1 AND secret = $2
