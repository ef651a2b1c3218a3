package payments

// AuthCheckEvery and AuthCheckRetry are how long an authorization goes
// unread, and how soon one whose read failed is read again, for the tests
// outside the package (authcheck.go).
const (
	AuthCheckEvery = authCheckEvery
	AuthCheckRetry = authCheckRetry
	AuthCheckBatch = authCheckBatch
)

// SQLiteClaimAuthorizations is SQLite's statement that claims the
// authorizations due for a read (sql/sqlite.sql), for the test of its plan.
var SQLiteClaimAuthorizations = sqliteSQL.SQL("claim_authorizations")
