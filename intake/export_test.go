package intake

// SQL is the package's statement called name, for the plan tests.
func SQL(name string) string { return statements.SQL(name) }
