-- Statements of package database that both databases run, through GORM
-- (whose "?" placeholders each dialect rewrites).

-- name: schema_state_read
-- What the last complete migration recorded (migration 0013): the build
-- that ran it, the catalog it left and the version it migrated to.
SELECT build, catalog, version FROM schema_state WHERE id = 1

-- name: schema_state_write
-- Records what this migration leaves, replacing what an earlier one
-- recorded: the row is one, id 1.
INSERT INTO schema_state (id, build, catalog, version, migrated_at) VALUES (1, ?, ?, ?, CURRENT_TIMESTAMP)
ON CONFLICT (id) DO UPDATE SET build = excluded.build, catalog = excluded.catalog, version = excluded.version,
	migrated_at = excluded.migrated_at
