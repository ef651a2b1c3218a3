package payments

// PageSQL is the first page's statement for f, of size rows, with its named
// arguments, for the tests of its plan.
func PageSQL(f Filter, size int) (string, map[string]any, error) {
	l, err := listingOf(f)
	if err != nil {
		return "", nil, err
	}
	q := l.page(nil, size)
	return q.sql, q.args, nil
}

// LookupSQL is the statement of lookup.sql called name.
func LookupSQL(name string) string { return lookupSQL.SQL(name) }
