package database

import (
	"embed"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// The package's own statements, all PostgreSQL's, in sql/postgres.sql
// (sqlq.Load). The migrations are files of their own (migrate.go).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var postgresSQL = sqlq.MustLoad(sqlFiles, "sql/postgres.sql")
