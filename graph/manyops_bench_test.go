package graph

import (
	"fmt"
	"strings"
)

// manyOps is a document of n operations that each spread fragment F, then
// F: gqlparser's validator walks a fragment again for every operation that
// spreads it, so the walk grows with n times F's size though the text grows
// with their sum. named gives each operation a name (a document that can
// pass validation); anonymous ones are the fewest tokens each.
func manyOps(n int, named bool, fragment string) string {
	var b strings.Builder
	for i := range n {
		if named {
			fmt.Fprintf(&b, "query Q%d{...F}", i)
		} else {
			b.WriteString("{...F}")
		}
	}
	b.WriteString(" fragment F on Query{" + fragment + "}")
	return b.String()
}

// aliasedFields is n fields of distinct response names, which the overlap
// rule need not compare.
func aliasedFields(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d:__typename ", i)
	}
	return b.String()
}

// repeatedField is one field whose selection repeats a subfield n times:
// the overlap rule compares every two of them, once for each operation
// that reaches them.
func repeatedField(n int) string {
	return `__type(name:"Query"){` + strings.Repeat("name ", n) + "}"
}

// fragmentChain is n operations spreading F0, and a chain of m fragments
// each spreading the next: the validator walks the rest of the chain from
// every operation and from every fragment.
func fragmentChain(n, m int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "query Q%d{...F0}", i)
	}
	for i := range m {
		fmt.Fprintf(&b, " fragment F%d on Query{__typename ...F%d}", i, i+1)
	}
	fmt.Fprintf(&b, " fragment F%d on Query{__typename}", m)
	return b.String()
}

// manyOpsDocuments are the costliest documents of many operations found
// within the caps on a document (DefaultMaxQueryBytes, DefaultMaxTokens),
// by shape. Their sizes were pushed to what the token cap allows
// (TestManyOpsDocumentsFitTheCaps).
var manyOpsDocuments = []struct{ name, query string }{
	// 1,250 anonymous operations × 1,650 aliased fields: 2 million
	// selections walked.
	{"aliases", manyOps(1250, false, aliasedFields(1650))},
	// 2,390 anonymous operations reaching one set of 400 repeats: the
	// overlap rule compares 80,000 pairs again for every operation.
	{"repeats", manyOps(2390, false, repeatedField(400))},
	// The same with named operations, fewer for their names' tokens: a
	// document that passed validation.
	{"named repeats", manyOps(1590, true, repeatedField(400))},
	// 700 operations and a chain of 640 fragments: walked from every
	// operation and from every fragment.
	{"chain", fragmentChain(700, 640)},
}
