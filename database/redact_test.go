package database

import (
	"strings"
	"testing"
)

// TestRedactHidesEveryPassword: a password never survives redact, in a URL
// that parses, in one that does not (an unescaped "%", a space, a "/" or a
// "?"), in the query under any spelling, or in a key=value string; the
// scheme, user, host and path stay, to tell which database was meant.
func TestRedactHidesEveryPassword(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://bob:S3cret@db.example:5432/cmpay":                                      "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:50%off-S3cret@db.example:5432/cmpay":                               "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:S3cret PW@db.example:5432/cmpay":                                   "postgres://bob:xxxxx@db.example:5432/cmpay",
		"postgres://bob:a/S3cret@db.example/cmpay":                                         "postgres://bob:xxxxx@db.example/cmpay",
		"postgres://bob:a?S3cret@db.example/cmpay":                                         "postgres://(not shown)",
		"postgres://bob:a#S3cret@db.example/cmpay":                                         "postgres://(not shown)",
		"postgres://db.example:5432/cmpay?sslmode=require&password=p@S3cret&sslmode=bogus": "postgres://(not shown)",
		"postgres://bob:a@S3cret@db.example/cmpay?sslmode=disable":                         "postgres://bob:xxxxx@db.example/cmpay?…",
		"postgres://db.example/cmpay?user=bob&password=S3cret":                             "postgres://db.example/cmpay?…",
		"postgres://db.example/cmpay?sslpassword=S3cret":                                   "postgres://db.example/cmpay?…",
		"postgres://db.example/cmpay?pass%77ord=S3cret":                                    "postgres://db.example/cmpay?…",
		"host=db.example user=bob password=S3cret dbname=cmpay":                            "(a connection string, not shown)",
		"host=db.example password=S3\\ cret sslpassword=S3cret":                            "(a connection string, not shown)",
		"postgres://bob@db.example/cmpay":                                                  "postgres://bob@db.example/cmpay",
		"mysql://bob:S3cret@db.example/cmpay":                                              "mysql://bob:xxxxx@db.example/cmpay",
	} {
		got := redact(raw)
		if got != want || strings.Contains(got, "S3") || strings.Contains(got, "cret") {
			t.Errorf("redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestDialectorErrorHidesPassword: the whole error a bad DATABASE_URL
// gives, CMPay's quote of it and the driver's error it wraps, holds no
// secret.
func TestDialectorErrorHidesPassword(t *testing.T) {
	for _, raw := range []string{
		"postgres://bob:50%off-S3cret@db.example:5432/cmpay",
		"postgres://db.example/cmpay?sslpassword=S3cret&sslmode=bogus",
		"postgres://db.example/cmpay?pass%77ord=S3cret&sslmode=bogus",
		"postgres://db.example:5432/cmpay?sslmode=require&password=p@S3cret&sslmode=bogus",
		"host=db.example sslpassword=S3cret sslmode=bogus",
		"host=db.example password=S3\\ cret sslmode=bogus",
		"mysql://bob:S3cret@db.example/cmpay",
	} {
		_, _, err := dialectorFor(raw, nil)
		if err == nil {
			t.Errorf("dialectorFor(%q) took it", raw)
			continue
		}
		if strings.Contains(err.Error(), "S3") || strings.Contains(err.Error(), "cret") {
			t.Errorf("dialectorFor(%q): %v", raw, err)
		}
	}
}
