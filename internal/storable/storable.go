// Package storable says which values both databases can hold alike, so
// that a value neither could store is refused (or found nowhere) before
// PostgreSQL answers it with an error and SQLite with another result.
package storable

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Text says whether PostgreSQL can hold s as text: valid UTF-8 without a
// NUL byte. It refuses anything else with an error, where SQLite would
// take it or find nothing.
func Text(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Time says whether both databases hold t and order it alike: years 1 to
// 9999. PostgreSQL refuses a timestamp before 4713 BC or after 294276 AD
// with an error (SQLSTATE 22008), and SQLite compares times as text, where
// "10000-01-01" sorts before "2026-…".
func Time(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}
