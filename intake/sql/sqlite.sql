-- Statements of package intake that only SQLite runs.

-- name: sweep_events
-- PostgreSQL's sweep_events without row locks: SQLite has one writer at a
-- time.
DELETE FROM processor_events WHERE id IN
	(SELECT id FROM processor_events WHERE received_at < $1
	 ORDER BY received_at LIMIT $2)
