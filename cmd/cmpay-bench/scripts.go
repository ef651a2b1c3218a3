package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cmpay/cmpay/internal/iso4217"
	"github.com/cmpay/cmpay/internal/load"
	"github.com/cmpay/cmpay/payments"
)

// The pgbench scripts. Each limit is the least SQL that does one request's
// work in one statement, on the current schema: the rows and columns the
// server writes (payments with their status and captured amount, keys and
// attempts with their operation and parameters, a fingerprint of the
// server's size), and no more. The server's own statements run beside them
// as they are, with one request per statement.

// Payments the pgbench runs act on, stored beforehand with the server's
// (load.SeedPayments): authorizations to capture, numbered per client, and
// captured payments to refund, picked at random.
const (
	limitCapturePrefix  = "pay_lc_" // captured by limitCaptureSQL
	serverCapturePrefix = "pay_sc_" // captured by the server's statement
	pgbenchRefundPrefix = "pay_lr_" // refunded by both
)

// refundPayments is how many captured payments each refund run spreads its
// refunds over: enough that two refunds of one payment rarely meet, as
// they may.
const refundPayments = 10000

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

// nextPayment makes each pgbench client capture authorizations of its own,
// one after another: payment i * clients + client_id at its i-th
// transaction (pgbench keeps a client's variables from one transaction to
// the next; i starts at 0, set by -D).
func nextPayment(clients int) string {
	return "\\set i :i + 1\n\\set pay :i * " + strconv.Itoa(clients) + " + :client_id\n"
}

// capturePayments is how many authorizations a pgbench capture run of n
// transactions per client at most needs, numbered as nextPayment does.
func capturePayments(clients, perClient int) int { return (perClient + 1) * clients }

// captureParams is the canonical parameters of a capture of all of the
// payment (prefix || :pay), as SQL; captureFP stands for its fingerprint,
// which is the size of a real one.
func captureParams(prefix string) string {
	return `'{"operation":"CAPTURE_PAYMENT","paymentId":"` + prefix + `' || :pay || '"}'`
}

var changeFP = bytea(load.Fingerprint(`{"operation":"CAPTURE_PAYMENT","paymentId":"pay_0"}`))

// limitCaptureSQL: the least SQL that can do a capture's work: claim the
// key, capture the payment if it is still authorized, record the attempt.
func limitCaptureSQL(clients int) string {
	return nextPayment(clients) + `WITH k AS (
  INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params, payment_id, created_at)
  VALUES ('` + load.SeedClient + `', 'lc' || :pay, 'CAPTURE_PAYMENT', ` + changeFP + `, 2, ` + captureParams(limitCapturePrefix) + `,
          '` + limitCapturePrefix + `' || :pay, now())
  ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING payment_id, idempotency_key, params),
c AS (
  UPDATE payments p SET status = 'CAPTURED', captured_minor = p.amount_minor, captured_at = now()
  FROM k WHERE p.id = k.payment_id AND p.status = 'AUTHORIZED'
  RETURNING p.id, k.idempotency_key, k.params)
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport)
SELECT id, 'CAPTURE_PAYMENT', idempotency_key, 'APPLIED', now(), params, 'pgbench' FROM c;
`
}

// refundParams is the canonical parameters of a refund of 0.01 from the
// payment pgbenchRefundPrefix || :pay, as SQL.
const refundParams = `'{"amount":"0.01","operation":"REFUND_PAYMENT","paymentId":"` + pgbenchRefundPrefix + `' || :pay || '"}'`

// pickRefund picks a fresh key and one of the captured payments at random.
var pickRefund = "\\set n random(1, 1000000000000)\n\\set pay random(1, " + strconv.Itoa(refundPayments) + ")\n"

// limitRefundSQL: the least SQL that can do a refund's work: claim the key,
// take 0.01 from the payment if that much is left, store the refund,
// record the attempt.
var limitRefundSQL = pickRefund + `WITH k AS (
  INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params, payment_id, refund_id, created_at)
  VALUES ('` + load.SeedClient + `', 'lr' || :n || '-' || :client_id, 'REFUND_PAYMENT', ` + changeFP + `, 2, ` + refundParams + `,
          '` + pgbenchRefundPrefix + `' || :pay, 'ref_l' || :n || '-' || :client_id, now())
  ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING payment_id, refund_id, idempotency_key, params),
u AS (
  UPDATE payments p SET refunded_minor = p.refunded_minor + 1,
         status = CASE WHEN p.refunded_minor + 1 = p.captured_minor THEN 'REFUNDED' ELSE 'PARTIALLY_REFUNDED' END
  FROM k WHERE p.id = k.payment_id AND p.status IN ('CAPTURED', 'PARTIALLY_REFUNDED') AND p.captured_minor - p.refunded_minor >= 1
  RETURNING p.id, k.refund_id, k.idempotency_key, k.params),
r AS (
  INSERT INTO refunds (id, payment_id, amount_minor, idempotency_key, created_at)
  SELECT refund_id, id, 1, idempotency_key, now() FROM u)
INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, refund_id, transport)
SELECT id, 'REFUND_PAYMENT', idempotency_key, 'APPLIED', now(), params, refund_id, 'pgbench' FROM u;
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
	// $15 expired-before; then the processor's part as the sandbox's
	// foreseen approval gives it: $16 status, $17 processor, $18
	// references, $19 decline codes, $20 tokens, $21 operation ids, $22
	// their states, $23 their requests, $24 to $26 the lease (unused by a
	// settled operation); $27 whether each was sent before (create_batch.sql).
	return set + "\n" + oneRequest(payments.CreateBatchSQL, map[int]string{
		1: "ARRAY['pgbench']", 2: "ARRAY[" + key + "]", 3: "ARRAY[" + createFP + "]", 4: "ARRAY['" + createParams + "']",
		5: "ARRAY['p' || :n || '-' || :client_id]", 6: "ARRAY[1000::bigint]", 7: "ARRAY['BRL']", 8: "ARRAY['PIX']",
		9: "ARRAY[true]", 10: "ARRAY['pgbench']", 11: "ARRAY['']", 12: "ARRAY['']",
		13: "2", 14: "now()", 15: "now() - interval '24 hours'",
		16: "ARRAY['CAPTURED']", 17: "'sandbox'", 18: "ARRAY['sbx_pi.' || :n]", 19: "ARRAY[NULL::text]", 20: "ARRAY[NULL::text]",
		21: "ARRAY['op_p' || :n || '-' || :client_id]", 22: "ARRAY['SUCCEEDED']", 23: "ARRAY['{}']",
		24: "'pgbench'", 25: "now()", 26: "now()", 27: "ARRAY[false]",
	})
}

// serverChangeSQL is payments.ChangeBatchSQL for one request: a capture of
// all of an authorization (numbered per client, as for the limit), or a
// refund of 0.01 from one of the captured payments.
func serverChangeSQL(refund bool, clients int) string {
	// $13 holds the amount in minor units for each number of currency
	// digits there is (0 to the most, 4), $14 how many that is: for a
	// capture of all, none is given.
	width := maxCurrencyDigits() + 1
	minors := make([]string, width)
	for d := range minors {
		minors[d] = "NULL"
		if refund && d >= 2 { // 0.01 is a whole number of minor units from 2 digits on
			minors[d] = strconv.Itoa(pow10(d - 2))
		}
	}
	set, op, paymentID, key, params, given, refundID := nextPayment(clients), "CAPTURE_PAYMENT",
		"'"+serverCapturePrefix+"' || :pay", "'sc' || :pay", captureParams(serverCapturePrefix), "false", "''"
	opID := "'op_sc' || :pay" // each authorization is captured once
	if refund {
		set, op, paymentID, key, params, given, refundID = pickRefund, "REFUND_PAYMENT",
			"'"+pgbenchRefundPrefix+"' || :pay", "'sr' || :n || '-' || :client_id", refundParams, "true",
			"'ref_s' || :n || '-' || :client_id"
		opID = "'op_sr' || :n || '-' || :client_id"
	}
	// $1 operations, $2 payment ids, $3 keys, $4 fingerprints, $5 params,
	// $6 amount given, $7 reasons, $8 ids for new refunds, $9 transports,
	// $10 actors, $11 addresses, $12 client scopes; $13 amounts by digits,
	// $14 their number per request, $15 the fingerprint version, $16 now,
	// $17 expired-before, $18 the ids of the changes' processor operations,
	// $19 whether each was sent before (change_batch.sql).
	return set + oneRequest(payments.ChangeBatchSQL, map[int]string{
		1: "ARRAY['" + op + "']", 2: "ARRAY[" + paymentID + "]", 3: "ARRAY[" + key + "]", 4: "ARRAY[" + changeFP + "]",
		5: "ARRAY[" + params + "]", 6: "ARRAY[" + given + "]", 7: "ARRAY[NULL::text]", 8: "ARRAY[" + refundID + "]",
		9: "ARRAY['pgbench']", 10: "ARRAY['']", 11: "ARRAY['']", 12: "ARRAY['']",
		13: "ARRAY[" + strings.Join(minors, ", ") + "]::bigint[]", 14: strconv.Itoa(width),
		15: "2", 16: "now()", 17: "now() - interval '24 hours'",
		18: "ARRAY[" + opID + "]", 19: "ARRAY[false]",
	})
}

func maxCurrencyDigits() int {
	most := 0
	for _, d := range iso4217.All() {
		most = max(most, d)
	}
	return most
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
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
