package payments

import (
	"embed"
	"strings"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// The SQL statements live in sql/*.sql, each with a name and a comment
// (sqlq.Load): common.sql for what both dialects run as it is, and the
// listing's fragments; postgres.sql, create_batch.sql, change_batch.sql and
// settle_batch.sql for PostgreSQL; sqlite.sql for SQLite.

//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	// commonSQL is what both stores run alike (steps.go, list.go).
	commonSQL = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql")
	// postgresSQL and sqliteSQL are each dialect's statements, with the
	// common ones they include.
	postgresSQL = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql", "sql/postgres.sql", "sql/create_batch.sql", "sql/change_batch.sql", "sql/settle_batch.sql")
	sqliteSQL   = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql", "sql/sqlite.sql")
)

// The batch statements, as they run. They are exported for the benchmark,
// which runs them under pgbench beside the least SQL that does their work.
var (
	CreateBatchSQL = postgresSQL.SQL("create_batch")
	ChangeBatchSQL = withApplyChange(postgresSQL, postgresSQL.SQL("change_batch"))
)

// withApplyChange is text with {{apply_change}} replaced by the statement
// apply_change of set: how the lifecycle's one conditional update stands
// inside PostgreSQL's change_batch and SQLite's apply_one_change while it
// is written once (sql/common.sql).
func withApplyChange(set sqlq.Statements, text string) string {
	return strings.Replace(text, "{{apply_change}}", set.SQL("apply_change"), 1)
}
