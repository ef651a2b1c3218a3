-- Statements of package events that PostgreSQL and SQLite run as written.

-- name: move_delivery_sweep_frontier
-- Moves the frontier from $1 to $2 only if it still is $1 (or, with no
-- row yet, $1 is 0): of two sweeps at once (a leader handing over), the
-- second changes nothing rather than move it back. A sweep runs it after
-- each batch of its walk that moved the frontier, and stops walking when
-- it changes nothing.
INSERT INTO event_cursors (name, frontier, numbered, last_id) VALUES ('delivery_sweep', $2, '', 0)
ON CONFLICT (name) DO UPDATE SET frontier = excluded.frontier WHERE event_cursors.frontier = $1

-- name: delivery_ages
-- The deliveries after the id $1 (the frontier, then the last read),
-- oldest first, at most $2, with their status and whether they were
-- resent (a resend sets expires_at): the sweep reads them by id, which
-- follows their creation, so that it can stop at the first one young
-- enough to keep.
SELECT id, status, created_at, expires_at IS NOT NULL FROM webhook_deliveries WHERE id > $1 ORDER BY id LIMIT $2

-- name: delete_finished_attempts
-- Deletes the attempts of the deliveries delete_finished_deliveries
-- deletes (same arguments): the history goes before the delivery it
-- belongs to.
DELETE FROM webhook_attempts
WHERE delivery_id IN (
	SELECT id FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND (status = 'DELIVERED' OR status = 'CANCELED')
		AND created_at < $3
)

-- name: delete_finished_deliveries
-- Deletes the DELIVERED and CANCELED deliveries with $1 < id <= $2 created
-- before $3. A pending one stays, whatever its age, since its event must
-- still go out; a FAILED one stays until expire_failed takes it, at the
-- end of its keep (WEBHOOK_FAILED_KEEP), so that support may resend it.
-- One with attempts left stays for the next sweep: on PostgreSQL it may
-- have been delivered or cancelled (by another instance) after the
-- attempts statement read it pending or FAILED, and deleting it now would
-- leave its attempts, which no sweep reads, for good. Counted in a
-- subquery, which PostgreSQL probes through idx_webhook_attempts_delivery
-- for each row, where a NOT EXISTS would be an anti-join reading every
-- attempt.
DELETE FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND (status = 'DELIVERED' OR status = 'CANCELED')
	AND created_at < $3
	AND (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = webhook_deliveries.id) = 0

-- name: delete_resent_behind_attempts
-- Deletes the attempts of the deliveries delete_resent_behind deletes
-- (same arguments), first, as delete_finished_attempts.
DELETE FROM webhook_attempts
WHERE delivery_id IN (
	SELECT id FROM webhook_deliveries WHERE expires_at IS NOT NULL AND id <= $1
		AND (status = 'DELIVERED' OR status = 'CANCELED') AND created_at < $2
)

-- name: delete_resent_behind
-- Deletes the deliveries at or below the frontier $1 that were resent (a
-- resend sets expires_at) and are now DELIVERED or CANCELED, created
-- before $2: the walk from the frontier no longer meets them. Read through
-- idx_webhook_deliveries_resent, which holds only resent deliveries. One
-- with attempts left stays, as in delete_finished_deliveries.
DELETE FROM webhook_deliveries WHERE expires_at IS NOT NULL AND id <= $1
	AND (status = 'DELIVERED' OR status = 'CANCELED') AND created_at < $2
	AND (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = webhook_deliveries.id) = 0

-- name: delete_canceled_behind_attempts
-- Deletes the attempts of the deliveries delete_canceled_behind deletes
-- (same arguments), first, as delete_finished_attempts.
DELETE FROM webhook_attempts
WHERE delivery_id IN (
	SELECT id FROM webhook_deliveries WHERE status = 'CANCELED' AND (status = 'FAILED' OR status = 'CANCELED')
		AND id <= $1 AND created_at < $2
)

-- name: delete_canceled_behind
-- Deletes the CANCELED deliveries at or below the frontier $1 created
-- before $2: kept FAILED ones whose endpoint was deleted after the walk
-- passed them. Read through idx_webhook_deliveries_failed, whose condition
-- is written here as in the index, and which ends in the id. One with
-- attempts left stays, as in delete_finished_deliveries.
DELETE FROM webhook_deliveries WHERE status = 'CANCELED' AND (status = 'FAILED' OR status = 'CANCELED')
	AND id <= $1 AND created_at < $2
	AND (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = webhook_deliveries.id) = 0
