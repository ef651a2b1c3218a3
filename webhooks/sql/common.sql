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
-- so a second resend (or a second instance) changes nothing. Only one with
-- something to send: its stored body, or else its event to build it from
-- (one that failed before bodies were stored, whose event may be gone). An
-- event found here stays for the dispatcher: the events sweep keeps the
-- event of every delivery FAILED or PENDING without a body.
UPDATE webhook_deliveries
SET status = 'PENDING', retries = 0, next_attempt_at = $2, expires_at = $3, lease_until = NULL
WHERE id = $1 AND status = 'FAILED'
	AND (body IS NOT NULL OR EXISTS (SELECT 1 FROM payment_events e WHERE e.seq = webhook_deliveries.event_seq))

-- name: nothing_to_send
-- 1 when the delivery $1 is FAILED with neither a stored body nor its
-- event: run after a rearm_delivery that changed nothing, to tell why.
SELECT count(*) FROM webhook_deliveries d
WHERE d.id = $1 AND d.status = 'FAILED' AND d.body IS NULL
	AND NOT EXISTS (SELECT 1 FROM payment_events e WHERE e.seq = d.event_seq)

-- The admin's list of deliveries, newest first by id (which follows
-- creation), keyset-paged: each deliveries_* statement lists the ids of
-- up to $6 deliveries before the id $5 (_older, newest first) or after it
-- (_newer, oldest first), matching the filters $1 (status), $2 (endpoint),
-- $3 (payment) and $4 (client; the event's), each '' for any. Each is
-- driven by one filter's index on webhook_deliveries, which ends in the id
-- (all through the primary key), and checks the others on the rows it
-- reads; the caller picks the most selective filter given. The payment
-- and the client are the delivery's own columns, copied from its event
-- when the delivery was made: no statement reads payment_events. A
-- delivery made before they existed whose event was already swept has
-- '' for both: those filters leave it out. deliveries_of then reads the
-- rows.

-- name: deliveries_all_older
-- Newest first before $5, by the primary key: also a DELIVERED or PENDING
-- page, whose status is most rows (PostgreSQL may read PENDING ones
-- through idx_webhook_deliveries_due and sort them).
SELECT d.id FROM webhook_deliveries d
WHERE d.id < $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id DESC LIMIT $6

-- name: deliveries_all_newer
-- Oldest first after $5, as deliveries_all_older.
SELECT d.id FROM webhook_deliveries d
WHERE d.id > $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id LIMIT $6

-- name: deliveries_by_failed_older
-- Newest first before $5 of the status $1, FAILED or CANCELED, by the
-- partial index idx_webhook_deliveries_failed: its condition is written
-- here as in the index, so that both databases match it whatever $1 is.
SELECT d.id FROM webhook_deliveries d
WHERE d.status = $1 AND (d.status = 'FAILED' OR d.status = 'CANCELED') AND d.id < $5 AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id DESC LIMIT $6

-- name: deliveries_by_failed_newer
-- Oldest first after $5 of the status $1, as deliveries_by_failed_older.
SELECT d.id FROM webhook_deliveries d
WHERE d.status = $1 AND (d.status = 'FAILED' OR d.status = 'CANCELED') AND d.id > $5 AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id LIMIT $6

-- name: deliveries_by_endpoint_older
-- Newest first before $5 to the endpoint $2, by idx_webhook_deliveries_endpoint.
SELECT d.id FROM webhook_deliveries d
WHERE d.endpoint_id = $2 AND d.id < $5 AND ($1 = '' OR d.status = $1)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id DESC LIMIT $6

-- name: deliveries_by_endpoint_newer
-- Oldest first after $5 to the endpoint $2, by idx_webhook_deliveries_endpoint.
SELECT d.id FROM webhook_deliveries d
WHERE d.endpoint_id = $2 AND d.id > $5 AND ($1 = '' OR d.status = $1)
	AND ($3 = '' OR d.payment_id = $3) AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id LIMIT $6

-- name: deliveries_by_payment_older
-- Newest first before $5 of the payment $3, by idx_webhook_deliveries_payment.
SELECT d.id FROM webhook_deliveries d
WHERE d.payment_id = $3 AND d.id < $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id DESC LIMIT $6

-- name: deliveries_by_payment_newer
-- Oldest first after $5 of the payment $3, by idx_webhook_deliveries_payment.
SELECT d.id FROM webhook_deliveries d
WHERE d.payment_id = $3 AND d.id > $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($4 = '' OR d.client_id = $4)
ORDER BY d.id LIMIT $6

-- name: deliveries_by_client_older
-- Newest first before $5 of the client $4, by idx_webhook_deliveries_client.
SELECT d.id FROM webhook_deliveries d
WHERE d.client_id = $4 AND d.id < $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3)
ORDER BY d.id DESC LIMIT $6

-- name: deliveries_by_client_newer
-- Oldest first after $5 of the client $4, by idx_webhook_deliveries_client.
SELECT d.id FROM webhook_deliveries d
WHERE d.client_id = $4 AND d.id > $5 AND ($1 = '' OR d.status = $1) AND ($2 = '' OR d.endpoint_id = $2)
	AND ($3 = '' OR d.payment_id = $3)
ORDER BY d.id LIMIT $6

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
