-- Statements of package database that only SQLite runs.

-- name: catalog
-- Everything a migration makes, one line each (schemaCatalog hashes them):
-- SQLite keeps each table's, index's and trigger's definition as its
-- CREATE statement, rewritten by every ALTER TABLE; then the rows that say
-- how far the schema is (schema_versions) and the currencies each migration
-- writes.
SELECT type || ' ' || name || ' ' || tbl_name || ' ' || COALESCE(sql, '') FROM sqlite_master
UNION ALL
SELECT 'version ' || version FROM schema_versions
UNION ALL
SELECT 'currency ' || code || ' ' || digits FROM currencies
