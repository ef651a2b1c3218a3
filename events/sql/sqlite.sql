-- Statements of package events that only SQLite runs. SQLite has one writer
-- at a time, so insertion order is commit order and an event's id is its
-- seq, final at commit (store_sqlite.go).

-- name: last_id
-- The highest event id given so far, 0 when none: the newest event's seq.
SELECT COALESCE(MAX(seq), 0) FROM payment_events

-- name: numbered_events
-- The events with $1 < id <= $2, of the client $3 and the payment $4 when
-- they are not empty, oldest first.
SELECT e.seq AS id, e.seq, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id,
	e.payment_key, e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor,
	e.refunded_minor, e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor, r.reason, r.idempotency_key, r.created_at, r.status, r.failure_code, r.settled_at, r.returned_at,
	COALESCE(p.processor, 'sandbox'), p.processor_reference, p.decline_code, p.payment_method_token,
	p.next_action_type, p.pix_code, p.boleto_line, p.hosted_url, p.next_action_expires_at, p.paid_at, p.expired_at
FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
LEFT JOIN payments p ON p.id = e.payment_id
WHERE e.seq > $1 AND e.seq <= $2 AND ($3 = '' OR e.client_id = $3) AND ($4 = '' OR e.payment_id = $4)
ORDER BY 1

-- name: events_by_seq
-- The events whose seqs the JSON array $1 lists, with no id (0): the
-- webhook dispatcher knows each one's id from its delivery. SQLite binds no
-- arrays; json_each reads one.
SELECT 0 AS id, e.seq, e.type, e.at, e.idempotency_key, e.refund_id, e.payment_id, e.client_id,
	e.payment_key, e.amount_minor, e.currency, e.method, e.payment_created_at, e.status, e.captured_minor,
	e.refunded_minor, e.captured_at, e.canceled_at, e.replay_count, e.rejected_count,
	r.amount_minor, r.reason, r.idempotency_key, r.created_at, r.status, r.failure_code, r.settled_at, r.returned_at,
	COALESCE(p.processor, 'sandbox'), p.processor_reference, p.decline_code, p.payment_method_token,
	p.next_action_type, p.pix_code, p.boleto_line, p.hosted_url, p.next_action_expires_at, p.paid_at, p.expired_at
FROM payment_events e LEFT JOIN refunds r ON r.id = e.refund_id
LEFT JOIN payments p ON p.id = e.payment_id
WHERE e.seq IN (SELECT value FROM json_each($1))

-- name: deliveries_cursor
-- The last event given its deliveries (0 before the first pass).
SELECT COALESCE((SELECT frontier FROM event_cursors WHERE name = 'deliveries'), 0)

-- name: unnumbered
-- How many events past the cursor $1 one pass takes (at most 5000, the
-- oldest), and the last of them.
SELECT count(*), COALESCE(max(seq), 0)
FROM (SELECT seq FROM payment_events WHERE seq > $1 ORDER BY seq LIMIT 5000)

-- name: create_deliveries
-- Creates, at $3, the deliveries of the events with $1 < seq <= $2 for
-- every endpoint that receives them: not deleted, bound to no client or to
-- the event's, subscribed to every type or to the event's; each with the
-- event's payment and client, for the admin's filters (written here, off
-- the request path).
INSERT INTO webhook_deliveries (event_id, event_seq, endpoint_id, payment_id, client_id, status, event_at, created_at,
	attempts, retries, next_attempt_at, claim_token, last_status, last_error)
SELECT e.seq, e.seq, w.id, e.payment_id, e.client_id, 'PENDING', e.at, $3, 0, 0, $3, 0, 0, ''
FROM payment_events e
JOIN webhook_endpoints w ON w.deleted_at IS NULL AND (w.client_id = '' OR w.client_id = e.client_id)
	AND (w.event_types = '' OR w.event_types LIKE '%,' || e.type || ',%')
WHERE e.seq > $1 AND e.seq <= $2

-- name: save_deliveries_cursor
-- Moves the cursor to $1, in the transaction that created the deliveries
-- up to it.
INSERT INTO event_cursors (name, frontier, numbered, last_id) VALUES ('deliveries', $1, '', 0)
ON CONFLICT (name) DO UPDATE SET frontier = excluded.frontier, numbered = excluded.numbered, last_id = excluded.last_id

-- name: event_ages
-- The events after the seq $1, oldest first, at most $2: the sweep reads
-- them by seq, which follows time, so that it can stop at the first one
-- young enough to keep.
SELECT seq, at FROM payment_events WHERE seq > $1 ORDER BY seq LIMIT $2

-- name: delete_old_events
-- Deletes the events with $1 < seq <= $2 (the sweep found them old) but
-- the newest, so that the highest id given (last_id) never falls; those not
-- yet given their deliveries; and those a delivery without a stored body
-- still needs: one pending, or one FAILED before bodies were stored, which
-- a resend builds its body from, whatever its keep (expire_failed, earlier
-- in the sweep, takes it at the end of its keep), as on PostgreSQL
-- (old_passes). A delivery with a body (stored when it failed) needs no
-- event.
DELETE FROM payment_events
WHERE seq > $1 AND seq <= $2
	AND seq < (SELECT MAX(seq) FROM payment_events)
	AND seq <= (SELECT frontier FROM event_cursors WHERE name = 'deliveries')
	AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = payment_events.seq AND d.body IS NULL
		AND (d.status = 'PENDING' OR d.status = 'FAILED'))

-- name: expire_failed_attempts
-- Deletes the attempts of the deliveries expire_failed deletes (same
-- arguments), first, in its transaction: SQLite's one writer lets no
-- resend in between.
DELETE FROM webhook_attempts
WHERE delivery_id IN (SELECT id FROM webhook_deliveries INDEXED BY idx_webhook_deliveries_failed_at
                      WHERE status = 'FAILED' AND COALESCE(last_attempt_at, created_at) < $1
                      ORDER BY COALESCE(last_attempt_at, created_at) LIMIT $2)

-- name: expire_failed
-- Deletes up to $2 FAILED deliveries last tried (else created) before $1,
-- whose keep is over: found through idx_webhook_deliveries_failed_at
-- (migration 0012), which holds the FAILED ones only, by that time, named
-- because SQLite, without statistics, would rather read the index of the
-- FAILED and CANCELED ones by id, every kept one. The same rows as
-- expire_failed_attempts, in the same transaction.
DELETE FROM webhook_deliveries
WHERE id IN (SELECT id FROM webhook_deliveries INDEXED BY idx_webhook_deliveries_failed_at
             WHERE status = 'FAILED' AND COALESCE(last_attempt_at, created_at) < $1
             ORDER BY COALESCE(last_attempt_at, created_at) LIMIT $2)

-- name: delivery_sweep_frontier
-- The deliveries sweep's frontier (0 before the first sweep): every
-- delivery with an id at or below it is gone, FAILED (expire_failed takes
-- it at the end of its keep), resent (delete_resent_behind takes it once
-- delivered or cancelled), or a FAILED one cancelled with its endpoint
-- after the sweep passed it (delete_canceled_behind). So a sweep walks
-- from it, not from the oldest kept delivery. The frontier stored, then
-- where to walk from: 0 when the stored one is past the last id the
-- table's AUTOINCREMENT has given (sqlite_sequence), since ids given again
-- from 1 (that row deleted) would otherwise all lie behind it, never met
-- by the walk. Deleting the newest deliveries moves neither, so a quiet
-- spell does not send the walk back to 0.
SELECT f.frontier, CASE WHEN f.frontier > COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'webhook_deliveries'), 0)
	THEN 0 ELSE f.frontier END
FROM (SELECT COALESCE((SELECT frontier FROM event_cursors WHERE name = 'delivery_sweep'), 0) AS frontier) f
