package database

import (
	"embed"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// The package's own statements: PostgreSQL's in sql/postgres.sql,
// SQLite's in sql/sqlite.sql, and those both run through GORM in
// sql/schema_state.sql (sqlq.Load). The migrations are files of their own
// (migrate.go).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	postgresSQL = sqlq.MustLoad(sqlFiles, "sql/postgres.sql")
	sqliteSQL   = sqlq.MustLoad(sqlFiles, "sql/sqlite.sql")
	sharedSQL   = sqlq.MustLoad(sqlFiles, "sql/schema_state.sql")
)
