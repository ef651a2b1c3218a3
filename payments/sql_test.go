package payments

import (
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
)

// TestEveryStatementIsUsed: every statement of sql/*.sql loads (the sets
// are loaded when the package starts) and is run by the package's code,
// so that none stays behind untested when the code stops running it.
func TestEveryStatementIsUsed(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t, commonSQL, postgresSQL, sqliteSQL)
}

// TestEveryFragmentIsExpanded: no statement, as a store runs it, still
// holds a {{fragment}} that expand does not know.
func TestEveryFragmentIsExpanded(t *testing.T) {
	t.Parallel()
	for _, set := range []sqlq.Statements{postgresSQL, sqliteSQL} {
		for _, name := range set.Names() {
			if q := expand(set, set.SQL(name)); strings.Contains(q, "{{") {
				t.Errorf("statement %s keeps a fragment after expand: %s", name, q)
			}
		}
	}
}
