package database

import (
	"strings"
	"testing"
)

// TestRedactHidesEveryPassword: a password never survives redact, in a URL
// that parses, in one that does not (an unescaped "%", a space, a "/"), in
// the query, or in a key=value string; what is not a password stays.
func TestRedactHidesEveryPassword(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://bob:S3cret@db.example:5432/cmpay":           "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:50%off-S3cret@db.example:5432/cmpay":    "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:S3cret PW@db.example:5432/cmpay":        "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:a/S3cret@db.example/cmpay":              "postgres://bob:xxxxx@db.example/cmpay",
		"postgres://bob:a@S3cret@db.example/cmpay":              "postgres://bob:xxxxx@db.example/cmpay",
		"postgres://db.example/cmpay?user=bob&password=S3cret":  "postgres://db.example/cmpay?user=bob&password=xxxxx",
		"host=db.example user=bob password=S3cret dbname=cmpay": "host=db.example user=bob password=xxxxx dbname=cmpay",
		"host=db.example password = 'S3 cr\\'et' dbname=cmpay":  "host=db.example password = xxxxx dbname=cmpay",
		"postgres://bob@db.example/cmpay":                       "postgres://bob@db.example/cmpay",
		"sqlite:/var/lib/cmpay/cmpay.db":                        "sqlite:/var/lib/cmpay/cmpay.db",
		"mysql://bob:S3cret@db.example/cmpay":                   "mysql://bob:xxxxx@db.example/cmpay",
	} {
		got := redact(raw)
		if got != want || strings.Contains(got, "S3") {
			t.Errorf("redact(%q) = %q, want %q", raw, got, want)
		}
	}
}
