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

-- name: catalog
-- Everything a migration makes, one line each (schemaCatalog hashes them):
-- columns with type, nullability, default and comment (GORM sets a model's
-- comment tag); indexes, constraints,
-- triggers and functions by their definitions; table settings; and the
-- rows that say how far the schema is (schema_versions) and the
-- currencies each migration writes. Read straight from pg_catalog, in one
-- round trip: information_schema is far slower. Definitions name their
-- tables with the schema, which is cut out: a schema restored under
-- another name (the tests' copies) reads as the same.
SELECT replace(line, current_schema() || '.', '') FROM (
SELECT 'column ' || c.relname || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
	|| a.attnotnull::text || ' ' || COALESCE(pg_get_expr(d.adbin, d.adrelid), '') || ' '
	|| COALESCE(quote_literal(col_description(a.attrelid, a.attnum)), '') AS line
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'index ' || pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
WHERE c.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc)
FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL
SELECT 'option ' || relname || ' ' || array_to_string(reloptions, ',')
FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NOT NULL
UNION ALL
SELECT 'version ' || version FROM schema_versions
UNION ALL
SELECT 'currency ' || code || ' ' || digits FROM currencies
) catalog
