-- Statements of package events that PostgreSQL and SQLite run as written.

-- name: delivery_ages
-- The deliveries after the id $1, oldest first, at most $2, with what says
-- whether one is kept (its status and last attempt): the sweep reads them
-- by id, which follows their creation, so that it can stop at the first
-- one young enough to keep.
SELECT id, status, created_at, last_attempt_at FROM webhook_deliveries WHERE id > $1 ORDER BY id LIMIT $2

-- name: delete_finished_attempts
-- Deletes the attempts of the deliveries delete_finished_deliveries
-- deletes (same arguments): the history goes before the delivery it
-- belongs to.
DELETE FROM webhook_attempts
WHERE delivery_id IN (
	SELECT id FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND status <> 'PENDING' AND created_at < $3
		AND NOT (status = 'FAILED' AND COALESCE(last_attempt_at, created_at) >= $4)
)

-- name: delete_finished_deliveries
-- Deletes the finished deliveries with $1 < id <= $2 created before $3. A
-- pending one stays, whatever its age, since its event must still go out;
-- so does a FAILED one last tried (else created) at or after $4, which
-- support may still resend (WEBHOOK_FAILED_KEEP). The event sweeps keep
-- the events of both (sqlite.sql delete_old_events, postgres.sql
-- old_passes).
DELETE FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND status <> 'PENDING' AND created_at < $3
	AND NOT (status = 'FAILED' AND COALESCE(last_attempt_at, created_at) >= $4)
