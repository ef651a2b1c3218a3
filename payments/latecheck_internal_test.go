package payments

import (
	"testing"

	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
)

// TestEveryLateCheckStatementIsUsed: lateSQL's statements, loaded apart
// from the other sets, are each run by the package's code.
func TestEveryLateCheckStatementIsUsed(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t, lateSQL)
}
