-- Statements of package intake that only PostgreSQL runs.

-- name: sweep_events
-- Deletes up to $2 events received before $1 (Sweeper.Sweep), oldest
-- first through the index on received_at. It skips rows other
-- transactions hold (another instance's sweep, an event being stamped
-- applied) rather than waiting for them: the next round takes them.
DELETE FROM processor_events WHERE id IN
	(SELECT id FROM processor_events WHERE received_at < $1
	 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)
