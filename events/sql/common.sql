-- Statements of package events that PostgreSQL and SQLite run as written.

-- name: delivery_ages
-- The deliveries after the id $1, oldest first, at most $2: the sweep reads
-- them by id, which follows their creation, so that it can stop at the first
-- one young enough to keep.
SELECT id, status, created_at FROM webhook_deliveries WHERE id > $1 ORDER BY id LIMIT $2

-- name: delete_finished_attempts
-- Deletes the attempts of the finished deliveries with $1 < id <= $2 created
-- before $3: the history goes before the delivery it belongs to.
DELETE FROM webhook_attempts
WHERE delivery_id IN (
	SELECT id FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND status <> 'PENDING' AND created_at < $3
)

-- name: delete_finished_deliveries
-- Deletes the finished deliveries with $1 < id <= $2 created before $3; a
-- pending one stays, whatever its age, since its event must still go out.
DELETE FROM webhook_deliveries WHERE id > $1 AND id <= $2 AND status <> 'PENDING' AND created_at < $3
