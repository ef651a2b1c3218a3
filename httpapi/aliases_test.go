package httpapi_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// Aliases of a field that reads the database count each of its queries
// against the complexity limit: 450 aliases of payments(first: 1) are
// refused before anything runs, while a hundred reads by id still pass.
func TestAliasedListsCountTheirQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	var q strings.Builder
	q.WriteString("{")
	for i := range 450 {
		q.WriteString(" a" + strconv.Itoa(i) + `: payments(first: 1) { pageInfo { hasNextPage } }`)
	}
	q.WriteString(" }")
	if res := b.gql(t, q.String(), nil); res.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("450 aliased payments lists: %s %d errors; want COMPLEXITY_LIMIT_EXCEEDED", res.code(), len(res.Errors))
	}
	q.Reset()
	q.WriteString("{")
	for i := range 100 {
		q.WriteString(" p" + strconv.Itoa(i) + `: payment(id: "pay_` + strconv.Itoa(i) + `") { id amount status }`)
	}
	q.WriteString(" }")
	if res := b.gql(t, q.String(), nil); len(res.Errors) > 0 {
		t.Errorf("100 payments read by id: %+v", res.Errors[0])
	}
}
