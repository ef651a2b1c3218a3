package load

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"
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
	pg := db.Dialector.Name() == "postgres"
	// Parameters in a SELECT list have no type PostgreSQL can infer.
	text, ts := "CAST(? AS TEXT)", "?"
	if pg {
		ts = "CAST(? AS timestamptz)"
	}
	at := time.Now().UTC().Truncate(time.Microsecond)

	var amount, minor, status, captured, capturedAt string
	var capture bool
	var capturedArgs []any
	switch mode {
	case Capture:
		amount, minor, capture, status, captured, capturedAt = SeedAuthorized, "1000", false, "AUTHORIZED", "0", "NULL"
	case Refund:
		amount, minor, capture, status, captured, capturedAt = SeedCaptured, "100000", true, "CAPTURED", "100000", ts
		capturedArgs = []any{at} // captured when created
	default:
		return nil, fmt.Errorf("seed payments: mode %q acts on no stored payment", mode)
	}
	params := CreateParams(amount, capture)
	// GORM spreads a byte slice given as a parameter into a list: the
	// fingerprint goes in as a literal.
	fp := fmt.Sprintf("X'%x'", Fingerprint(params))
	if pg {
		fp = fmt.Sprintf("decode('%x', 'hex')", Fingerprint(params))
	}
	series := "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < " + strconv.Itoa(n) + ") "
	stmts := []struct {
		sql  string
		args []any
	}{
		{series + `INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
			status, captured_minor, captured_at, refunded_minor, replay_count, rejected_count)
			SELECT ` + text + ` || i, ` + text + `, ` + text + ` || i, ` + minor + `, 'BRL', 'PIX', ` + ts + `,
			'` + status + `', ` + captured + `, ` + capturedAt + `, 0, 0, 0 FROM g`,
			append([]any{prefix, SeedClient, prefix, at}, capturedArgs...)},
		{series + `INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version,
			params, payment_id, created_at)
			SELECT ` + text + `, ` + text + ` || i, 'CREATE_PAYMENT', ` + fp + `, 2, ` + text + `, ` + text + ` || i, ` + ts + ` FROM g`,
			[]any{SeedClient, prefix, params, prefix, at}},
		{series + `INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport,
			actor, actor_address, refusal, differing_fields)
			SELECT ` + text + ` || i, 'CREATE_PAYMENT', ` + text + ` || i, 'CREATED', ` + ts + `, ` + text + `, 'seed', '', '', '', '' FROM g`,
			[]any{prefix, prefix, at, params}},
	}
	err := db.Transaction(func(tx *gorm.DB) error {
		for _, s := range stmts {
			if err := tx.Exec(s.sql, s.args...).Error; err != nil {
				return err
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
