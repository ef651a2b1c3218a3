-- What the last complete migration left (schema_state.go): a fingerprint
-- of the build that ran it (its models as GORM parses them, its numbered
-- migrations, its currencies) and a digest of the catalog it left. A start
-- that finds both equal to its own skips AutoMigrate; any other build, a
-- hand-made change, or a version undone makes them differ. One row, id 1.
CREATE TABLE IF NOT EXISTS schema_state (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	build TEXT NOT NULL,
	catalog TEXT NOT NULL,
	version INTEGER NOT NULL,
	migrated_at TIMESTAMP WITH TIME ZONE NOT NULL
);
