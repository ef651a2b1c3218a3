-- Statements of package database, all PostgreSQL's: SQLite runs none of
-- them (its migrations take the write lock as they begin, its clock is the
-- server's own, and it has no replica).

-- name: migration_lock
-- Makes instances that start at once migrate one after another
-- (MigrateReport): a transaction-scoped advisory lock, "cmpay" in hex,
-- released with the migration's commit.
SELECT pg_advisory_xact_lock(x'636d706179'::bigint)

-- name: clock
-- The database's clock as it is at this statement (ClockOffset), not at
-- the start of its transaction as now() would be.
SELECT clock_timestamp()

-- name: primary_wal_position
-- The primary's WAL flush position as a number (Replica.measure): every
-- acknowledged commit lies below it.
SELECT (pg_current_wal_flush_lsn() - '0/0')::bigint

-- name: replica_wal_position
-- How far the replica has replayed the primary's WAL, as a number
-- (Replica.measure). On a replica that has been promoted nothing is
-- replayed any more, and its own flush position is what it has; NULL
-- while it has replayed nothing yet.
SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
	ELSE pg_current_wal_flush_lsn() END - '0/0')::bigint
