package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cmpay/cmpay/internal/load"
	"github.com/cmpay/cmpay/payments"
)

// The pgbench scripts. Each limit is the least SQL that does one request's
// work in one statement, on the current schema: the rows and columns the
// server writes (payments with their status and captured amount, keys and
// attempts with their operation and parameters, a fingerprint of the
// server's size), and no more. The server's own statement runs beside them
// as it is, with one request per statement.

// createParams is the canonical payload of every create the pgbench
// scripts make or replay; createFP its fingerprint.
var (
	createParams = load.CreateParams("10.00", true)
	createFP     = bytea(load.Fingerprint(createParams))
)

// bytea is a fingerprint as a SQL literal.
func bytea(b []byte) string { return fmt.Sprintf(`'\x%x'::bytea`, b) }

// The least SQL that can do a create's work: claim the key under the
// unique index, store the payment, record the attempt, in one statement.
var limitNewSQL = `\set n random(1, 1000000000000)
WITH k AS (
  INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params, payment_id, created_at)
  VALUES ('pgbench', 'k' || :n || '-' || :client_id, 'CREATE_PAYMENT', ` + createFP + `, 2, '` + createParams + `',
          'p' || :n || '-' || :client_id, now())
  ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING payment_id, idempotency_key),
p AS (
  INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at, status, captured_minor, captured_at)
  SELECT payment_id, 'pgbench', idempotency_key, 1000, 'BRL', 'PIX', now(), 'CAPTURED', 1000, now() FROM k
  RETURNING id, idempotency_key)
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport)
SELECT id, 'CREATE_PAYMENT', idempotency_key, 'CREATED', now(), '` + createParams + `', 'pgbench' FROM p;
`

// The least SQL for a replay: look the key's payment up, record the
// attempt, return the payment.
var limitReplaySQL = `\set n random(1, 1000)
WITH k AS (SELECT payment_id, idempotency_key FROM idempotency_keys WHERE client_id = 'pgbench' AND idempotency_key = 'r' || :n),
a AS (INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport)
      SELECT payment_id, 'CREATE_PAYMENT', idempotency_key, 'REPLAYED', now(), '` + createParams + `', 'pgbench' FROM k)
SELECT p.id, p.amount_minor, p.currency, p.method, p.created_at, p.status, p.captured_minor, p.refunded_minor
FROM payments p JOIN k ON p.id = k.payment_id;
`

// serverCreateSQL is payments.CreateBatchSQL for one request, as the
// server sends it when requests do not overlap: a new key, or a replay of
// one of the keys seed stores for pgbench.
func serverCreateSQL(replay bool) string {
	set, key := `\set n random(1, 1000000000000)`, "'k' || :n || '-' || :client_id"
	if replay {
		set, key = `\set n random(1, 1000)`, "'r' || :n"
	}
	// $1 client ids, $2 keys, $3 fingerprints, $4 params, $5 payment ids,
	// $6 amounts, $7 currencies, $8 methods, $9 capture, $10 transports,
	// $11 actors, $12 addresses; $13 the fingerprint version, $14 now,
	// $15 expired-before (create_batch.sql).
	return set + "\n" + oneRequest(payments.CreateBatchSQL, map[int]string{
		1: "ARRAY['pgbench']", 2: "ARRAY[" + key + "]", 3: "ARRAY[" + createFP + "]", 4: "ARRAY['" + createParams + "']",
		5: "ARRAY['p' || :n || '-' || :client_id]", 6: "ARRAY[1000::bigint]", 7: "ARRAY['BRL']", 8: "ARRAY['PIX']",
		9: "ARRAY[true]", 10: "ARRAY['pgbench']", 11: "ARRAY['']", 12: "ARRAY['']",
		13: "2", 14: "now()", 15: "now() - interval '24 hours'",
	})
}

var paramRef = regexp.MustCompile(`\$(\d+)`)

// oneRequest is a batch statement with SQL in place of its parameters
// ($1 …), its comments removed (pgbench would take a name after a colon in
// a comment for a variable), on one line.
func oneRequest(sql string, params map[int]string) string {
	sql = paramRef.ReplaceAllStringFunc(stripComments(sql), func(m string) string {
		i, _ := strconv.Atoi(m[1:])
		p, ok := params[i]
		if !ok {
			panic(fmt.Sprintf("no value for parameter %s", m))
		}
		return p
	})
	return strings.Join(strings.Fields(sql), " ") + ";\n"
}

// stripComments removes the -- comments of SQL, leaving string literals
// alone.
func stripComments(sql string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case !quoted && c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			c = '\n'
		}
		b.WriteByte(c)
	}
	return b.String()
}
