package payments

// StatementName is the name a statement's text q has in sql/common.sql,
// or "" for any other text (a batch statement, BEGIN, COMMIT).
func StatementName(q string) string {
	for _, name := range commonSQL.Names() {
		if commonSQL.SQL(name) == q {
			return name
		}
	}
	return ""
}
