package dbtest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Plan is db's plan for query with args, one line a step: EXPLAIN on
// PostgreSQL, EXPLAIN QUERY PLAN on SQLite, each row's last column. query
// may number its arguments as PostgreSQL does ($1); on SQLite they are
// bound by their number (?1), which a "$1" parameter would not be.
func Plan(t testing.TB, db DB, query string, args ...any) string {
	t.Helper()
	prefix := "EXPLAIN "
	if db.Dialect == "sqlite" {
		prefix = "EXPLAIN QUERY PLAN "
		query = dollarArg.ReplaceAllString(query, "?$1")
	}
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := sqlDB.QueryContext(t.Context(), prefix+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		last := vals[len(vals)-1]
		if b, ok := last.([]byte); ok {
			last = string(b)
		}
		plan = append(plan, fmt.Sprint(last))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// dollarArg is a PostgreSQL argument number, $1 to $99.
var dollarArg = regexp.MustCompile(`\$([0-9]{1,2})\b`)
