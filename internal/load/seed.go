package load

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// The seeding statements, one file per dialect: PostgreSQL counts the
// series with generate_series and needs its parameters typed, SQLite
// counts with a recursive query.
//
//go:embed sql/*.sql
var seedFiles embed.FS

var (
	postgresSeedSQL = sqlq.MustLoad(seedFiles, "sql/seed.postgres.sql")
	sqliteSeedSQL   = sqlq.MustLoad(seedFiles, "sql/seed.sqlite.sql")
)

// Seeding by SQL. The capture mode needs an authorization for every
// capture a run can make, the refund mode captured payments with enough
// left to refund: far more payments than creating them over HTTP would
// allow before each run. SeedPayments writes them straight into the
// database, row for row as createPayment would have left them.

// SeedClient is the client the seeded payments belong to: their keys live
// in its namespace, and so do the keys of the captures and refunds.
const SeedClient = "load"

// Seed amounts: a capture takes all of SeedAuthorized; a refund takes 0.01
// of SeedCaptured, which leaves room for 100,000 refunds of each payment.
const (
	SeedAuthorized = "10.00"
	SeedCaptured   = "1000.00"
	RefundAmount   = "0.01"
)

// SeedPayments stores n payments of SeedClient, each with the idempotency
// key that created it (SeedKey) and its creation attempt, in the state mode
// acts on: AUTHORIZED for Capture (SeedAuthorized, nothing captured),
// CAPTURED for Refund (SeedCaptured, all of it captured). It returns their
// ids, prefix followed by 1 to n. The database must be migrated; PostgreSQL
// and SQLite alike.
func SeedPayments(db *gorm.DB, mode Mode, prefix string, n int) ([]string, error) {
	at := time.Now().UTC().Truncate(time.Microsecond)
	var amount string
	var minor, captured int64
	var capturedAt *time.Time
	capture, status := false, "AUTHORIZED"
	switch mode {
	case Capture:
		amount, minor = SeedAuthorized, 1000
	case Refund:
		amount, minor, captured, capturedAt = SeedCaptured, 100000, 100000, &at // captured when created
		capture, status = true, "CAPTURED"
	default:
		return nil, fmt.Errorf("seed payments: mode %q acts on no stored payment", mode)
	}
	params := CreateParams(amount, capture)
	type seeder struct {
		run sqlq.DB
		sql sqlq.Statements
	}
	s, err := sqlq.Pick(db,
		func(pg *sqlq.PG) seeder { return seeder{pg, postgresSeedSQL} },
		func(lite *sqlq.Lite) seeder { return seeder{lite, sqliteSeedSQL} })
	if err != nil {
		return nil, fmt.Errorf("seed payments: %w", err)
	}
	keyed := []any{prefix, SeedClient, n, at}
	err = s.run.Tx(context.Background(), func(tx sqlq.Runner) error {
		for _, st := range []struct {
			name string
			args []any
		}{
			{"seed_payments", append(slices.Clip(keyed), minor, status, captured, capturedAt)},
			{"seed_keys", append(slices.Clip(keyed), Fingerprint(params), params)},
			{"seed_attempts", []any{prefix, n, at, params}},
		} {
			if _, err := tx.Exec(context.Background(), s.sql.SQL(st.name), st.args...); err != nil {
				return fmt.Errorf("%s: %w", st.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seed %d payments for %s: %w", n, mode, err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i+1)
	}
	return ids, nil
}

// SeedKey is the idempotency key that created the seeded payment id: the
// id itself.
func SeedKey(id string) string { return id }

// CreateParams is the canonical JSON of a createPayment of amount BRL by
// PIX, as the server stores it with the key and the attempt (payments.Params:
// keys sorted, the amount reduced, "10" for "10.00").
func CreateParams(amount string, capture bool) string {
	return Params(map[string]string{"operation": "CREATE_PAYMENT", "amount": reduced(amount), "currency": "BRL",
		"method": "PIX", "capture": strconv.FormatBool(capture)})
}

// Params is the canonical JSON of a request's parameters: the keys sorted,
// every value a string.
func Params(p map[string]string) string {
	b, _ := json.Marshal(p) // a map of strings always encodes, its keys sorted
	return string(b)
}

// Fingerprint is the server's fingerprint of canonical params, version 2
// (payments.fingerprint): SHA-256 of a tag and the params, each prefixed
// with its length as a uvarint. A test checks that the server replays a
// seeded key, which it does only if the two agree.
func Fingerprint(params string) []byte {
	h := sha256.New()
	for _, s := range []string{"cmpay/idempotency/v2", params} {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	return h.Sum(nil)
}

// reduced is a decimal amount without trailing fraction zeros: "10" for
// "10.00", "0.01" for "0.01". Only for the plain amounts of this package.
func reduced(amount string) string {
	f, err := strconv.ParseFloat(amount, 64)
	if err != nil {
		panic(fmt.Sprintf("load: amount %q", amount))
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
