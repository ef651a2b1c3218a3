package payments

import (
	"testing"

	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
)

// TestEveryStatementIsUsed: every statement of sql/*.sql loads (the sets
// are loaded when the package starts) and is run by the package's code,
// so that none stays behind untested when the code stops running it.
func TestEveryStatementIsUsed(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t, commonSQL, postgresSQL, sqliteSQL)
}
