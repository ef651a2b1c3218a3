// Package nullable turns Go's zero values into nil pointers, for the
// places where "none" is NULL: a database column, JSON null, a GraphQL
// field shown as null. The API, its two transports and the storage need
// the same answer for "never happened" and "not given".
package nullable

import "time"

// String is s, or nil when it is empty.
func String(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Time is t, or nil for the zero time (time.IsZero: a zero time read back
// with a location is zero too).
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
