package payments

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
)

// The SQL statements live in sql/*.sql, one file each, with a comment per
// step. A {{fragment}} in a file is replaced by the text below, so that a
// column list, the layout of a result row, or a whole shared statement is
// written once.

//go:embed sql/*.sql
var sqlFiles embed.FS

// heldKeyJSON is a held key in a result row: one text column, a JSON
// object (heldRow in store_postgres.go), NULL where the row has none. The
// key is rare in an answer (a rejection, or a key the engine judges), and
// one column instead of eight is less for PostgreSQL to set up in every
// execution of a statement, whatever its rows: each column of a result row
// costs a type lookup and a projection step in every branch it passes.
func heldKeyJSON(h string) string {
	return "json_build_object('id', " + h + ".key_id, 'operation', " + h + ".held_operation, 'params', " + h + ".held_params, " +
		"'fingerprint', encode(" + h + ".held_fingerprint, 'hex'), 'version', " + h + ".held_version, " +
		"'created_at', " + h + ".held_created_at, 'payment_id', " + h + ".held_payment_id, 'refund_id', " + h + ".held_refund_id)::text"
}

// fragments are the texts a {{name}} stands for; {{name:alias}} gives
// them the alias of the row they read (a column list prefixes each column
// with it).
var fragments = map[string]func(alias string) string{
	"payment_columns": func(a string) string { return qualify(a, paymentColumns) },
	"refund_columns":  func(a string) string { return qualify(a, refundColumns) },
	"held_key":        heldKeyJSON,
	// rejected_held:h is h's held key for a rejection, NULL for a replay:
	// an answered replay needs nothing of its key (a rejection's error
	// does: its operation, payment and params), and most settled rows are
	// replays. The condition is the outcome's own ("CASE WHEN h.same THEN
	// 'REPLAYED' ELSE 'REJECTED'"), so that a row said to be a rejection
	// always carries its key.
	"rejected_held": func(h string) string {
		return "CASE WHEN " + h + ".same THEN NULL ELSE " + heldKeyJSON(h) + " END"
	},
	// held_of:k reads a key row k as the held columns.
	"held_of": func(k string) string {
		return qualify(k, "id AS key_id, operation AS held_operation, params AS held_params, "+
			"fingerprint AS held_fingerprint, fingerprint_version AS held_version, created_at AS held_created_at, "+
			"payment_id AS held_payment_id, refund_id AS held_refund_id")
	},
	// Typed NULLs for the parts of a result row an answer does not have.
	"no_payment": func(string) string {
		return "NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::timestamptz, " +
			"NULL::text, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::bigint"
	},
	"no_refund": func(string) string {
		return "NULL::text, NULL::text, NULL::bigint, NULL::text, NULL::text, NULL::timestamptz"
	},
	"no_held": func(string) string { return "NULL::text" },
}

var fragmentRef = regexp.MustCompile(`\{\{(\w+)(?::(\w+))?\}\}`)

// statement returns sql/<name>.sql with its fragments filled in. It panics
// on a missing file or an unknown fragment: every name is a constant of
// this package, and every statement is loaded when the package starts.
func statement(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic(err)
	}
	return fragmentRef.ReplaceAllStringFunc(string(b), func(ref string) string {
		m := fragmentRef.FindStringSubmatch(ref)
		if m[1] == "apply_change" { // a whole statement, shared by both dialects
			return statement(m[1])
		}
		f, ok := fragments[m[1]]
		if !ok {
			panic(fmt.Sprintf("sql/%s.sql: unknown fragment %s", name, ref))
		}
		return f(m[2])
	})
}

// qualify prefixes each column of a comma-separated list with alias.
func qualify(alias, columns string) string {
	if alias == "" {
		return columns
	}
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}
