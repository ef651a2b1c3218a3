package payments

import (
	"embed"
	"strings"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// The SQL statements live in sql/*.sql, each with a name and a comment
// (sqlq.Load): common.sql for what both dialects run as it is, and the
// listing's fragments, with pending.sql and learned.sql for what the
// processor's events bring and authcheck.sql for what its records say when
// no event came (its claim is in each dialect's file); by_payment.sql for
// what both run with a fragment each writes its own way; postgres.sql,
// create_batch.sql, change_batch.sql and settle_batch.sql for PostgreSQL;
// sqlite.sql for SQLite; duplicates.sql for the second payments and
// refunds a processor holds. learned.sql, authcheck.sql and duplicates.sql
// are run only through commonSQL, so the dialects' sets do not load them;
// latecheck.sql, the late check's, only through lateSQL (latecheck.go).

//go:embed sql/*.sql
var sqlFiles embed.FS

var (
	// commonSQL is what both stores run alike (steps.go, list.go).
	commonSQL = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql", "sql/learned.sql", "sql/authcheck.sql",
		"sql/duplicates.sql")
	// postgresSQL and sqliteSQL are each dialect's statements, with the
	// common ones they include.
	postgresSQL = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql", "sql/by_payment.sql", "sql/postgres.sql",
		"sql/create_batch.sql", "sql/change_batch.sql", "sql/settle_batch.sql")
	sqliteSQL = sqlq.MustLoad(sqlFiles, "sql/common.sql", "sql/pending.sql", "sql/by_payment.sql", "sql/sqlite.sql")
)

// The batch statements, as they run. They are exported for the benchmark,
// which runs them under pgbench beside the least SQL that does their work.
var (
	CreateBatchSQL = postgresSQL.SQL("create_batch")
	ChangeBatchSQL = expand(postgresSQL, postgresSQL.SQL("change_batch"))
)

// expand is text with each fragment {{name}} replaced by set's statement
// name: apply_change, the lifecycle's one conditional update, written once
// (sql/common.sql) and run inside PostgreSQL's change_batch and SQLite's
// apply_one_change; in_payment_ids, how each dialect takes a list of ids
// (by_payment.sql); payment_in_flight, Payment.inFlight in SQL.
func expand(set sqlq.Statements, text string) string {
	return strings.NewReplacer("{{apply_change}}", set.SQL("apply_change"),
		"{{in_payment_ids}}", set.SQL("in_payment_ids"),
		"{{payment_in_flight}}", set.SQL("payment_in_flight")).Replace(text)
}

// pageStatements are by_payment.sql's statements as a dialect runs them.
type pageStatements struct{ attempts, refunds, calls, async string }

func pageStatementsOf(set sqlq.Statements) pageStatements {
	return pageStatements{attempts: expand(set, set.SQL("attempts_of")), refunds: expand(set, set.SQL("refunds_of")),
		calls: expand(set, set.SQL("processor_calls_of")), async: expand(set, set.SQL("async_states_of"))}
}

var (
	postgresPage = pageStatementsOf(postgresSQL)
	sqlitePage   = pageStatementsOf(sqliteSQL)
	// postgresSweep and sqliteSweep are each dialect's sweep_keys.
	postgresSweep = expand(postgresSQL, postgresSQL.SQL("sweep_keys"))
	sqliteSweep   = expand(sqliteSQL, sqliteSQL.SQL("sweep_keys"))
)
