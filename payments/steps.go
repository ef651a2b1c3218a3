package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/models"
)

// The steps of an operation as single statements that run alike on both
// dialects. SQLite runs every request as these steps in one transaction
// (store_sqlite.go); PostgreSQL runs the common paths as one statement per
// batch (store_postgres.go) and only the rare ones here: recording a
// verdict the engine reached after the statement, forgetting an expired
// key.
//
// They go straight to the connection (on SQLite the transaction's, with
// statements prepared once: preparedStatements), past GORM's model
// machinery, which cost as much as SQLite's own work for every row of the
// hot path.
// Placeholders are $1, $2…: PostgreSQL's, and SQLite's too.

// conn is what a step runs on: a transaction or the pool, with its context,
// and where the store keeps them, its prepared statements.
type conn struct {
	ctx      context.Context
	pool     gorm.ConnPool
	prepared *preparedStatements
}

// preparedKey is the gorm setting under which a store hands a transaction
// its prepared statements (sqliteStore.batch).
const preparedKey = "cmpay:prepared"

func connOf(db *gorm.DB) conn {
	ctx := db.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c := conn{ctx: ctx, pool: db.Statement.ConnPool}
	if v, ok := db.Get(preparedKey); ok {
		c.prepared = v.(*preparedStatements)
	}
	return c
}

func (c conn) exec(query string, args ...any) (sql.Result, error) {
	stmt := c.statement(query)
	if stmt == nil {
		return c.pool.ExecContext(c.ctx, query, args...)
	}
	return stmt.ExecContext(c.ctx, args...)
}

func (c conn) queryRow(query string, args ...any) *sql.Row {
	stmt := c.statement(query)
	if stmt == nil {
		return c.pool.QueryRowContext(c.ctx, query, args...)
	}
	return stmt.QueryRowContext(c.ctx, args...)
}

// statement is query prepared for c's transaction, or nil when c has no
// prepared statements, is not a transaction, or query is not prepared yet.
func (c conn) statement(query string) *sql.Stmt {
	tx, ok := c.pool.(*sql.Tx)
	if c.prepared == nil || !ok {
		return nil
	}
	stmt := c.prepared.get(query)
	if stmt == nil {
		return nil
	}
	// Prepared on the pool, the statement is prepared once per connection
	// and reused by every transaction that runs on that connection.
	return tx.StmtContext(c.ctx, stmt)
}

// preparedStatements are the statements of the steps, each prepared once:
// SQLite spends as long parsing a small statement as running it. A
// statement is prepared on the pool, which needs a free connection, and
// SQLite's pool has one, which the transaction that first meets the
// statement holds: so it runs unprepared then, and is prepared after
// (prepareWanted), for every later transaction.
type preparedStatements struct {
	db     *sql.DB
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
}

// get is query's statement, or nil when it is not prepared yet.
func (p *preparedStatements) get(query string) *sql.Stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	stmt := p.stmts[query]
	if stmt == nil {
		if p.wanted == nil {
			p.wanted = map[string]bool{}
		}
		p.wanted[query] = true
	}
	return stmt
}

// prepareWanted prepares the statements transactions asked for. It must
// run outside a transaction, and holds no lock while it waits for the
// connection: a transaction holding it may be asking for a statement. A
// statement that fails to prepare stays wanted, and runs unprepared, where
// its error shows.
func (p *preparedStatements) prepareWanted(ctx context.Context) {
	p.mu.Lock()
	var queries []string
	for query := range p.wanted {
		queries = append(queries, query)
	}
	p.mu.Unlock()

	for _, query := range queries {
		stmt, err := p.db.PrepareContext(ctx, query)
		if err != nil {
			continue
		}
		p.mu.Lock()
		if p.stmts == nil {
			p.stmts = map[string]*sql.Stmt{}
		}
		if _, ok := p.stmts[query]; ok {
			_ = stmt.Close() // prepared meanwhile, after another batch
		} else {
			p.stmts[query] = stmt
		}
		delete(p.wanted, query)
		p.mu.Unlock()
	}
}

// plausibleID reports whether id could be one this API issued. Anything
// else is NOT_FOUND without asking the database, which would refuse bytes
// it cannot store (see StorableText) with an error rather than find nothing.
func plausibleID(id string) bool {
	return id != "" && len(id) <= 40 && StorableText(id)
}

// StorableText says whether PostgreSQL can hold s as text: valid UTF-8
// without a NUL byte. It refuses anything else with an error, where SQLite
// would find nothing; this API stores neither, so a lookup by such a value
// finds nothing without asking.
func StorableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// readPayment reads one payment; ok is false when no payment has the id.
func readPayment(db *gorm.DB, id string) (p Payment, ok bool, err error) {
	if !plausibleID(id) {
		return Payment{}, false, nil
	}
	p, err = scanPayment(connOf(db).queryRow(`SELECT `+paymentColumns+` FROM payments WHERE id = $1`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, fmt.Errorf("read payment: %w", err)
	}
	return p, true, nil
}

// readRefund reads one refund of payment p.
func readRefund(db *gorm.DB, id string, p Payment) (*Refund, error) {
	var row models.Refund
	// refundColumns' order.
	err := connOf(db).queryRow(`SELECT `+refundColumns+` FROM refunds WHERE id = $1`, id).
		Scan(&row.ID, &row.PaymentID, &row.AmountMinor, &row.Reason, &row.IdempotencyKey, &row.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("refund %s of the key's payment %s is missing", id, p.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("read refund: %w", err)
	}
	r := refundFromRow(row, p.Amount.Currency)
	return &r, nil
}

// readHeld reads the key a client holds, if any, and the payment it
// belongs to. A version 1 key's parameters are rebuilt from the payment it
// created.
func readHeld(db *gorm.DB, clientID, key string) (*heldKey, Payment, error) {
	c := connOf(db)
	var h heldKey
	var params, refundID sql.NullString
	err := c.queryRow(`SELECT id, operation, params, fingerprint, fingerprint_version, created_at, payment_id, refund_id
		FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2`, clientID, key).
		Scan(&h.id, &h.operation, &params, &h.fp, &h.version, &h.createdAt, &h.paymentID, &refundID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Payment{}, nil
	}
	if err != nil {
		return nil, Payment{}, fmt.Errorf("read key: %w", err)
	}
	p, ok, err := readPayment(db, h.paymentID)
	if err != nil {
		return nil, Payment{}, err
	}
	if !ok {
		return nil, Payment{}, fmt.Errorf("key %d names payment %s, which does not exist", h.id, h.paymentID)
	}
	if params.Valid {
		if h.params, err = decodeParams(&params.String); err != nil {
			return nil, Payment{}, err
		}
	} else {
		h.params = version1Params(p)
	}
	h.refundID = refundID.String
	return &h, p, nil
}

// claimKey inserts cmd's key for the client unless the client holds it
// already, and reports whether it did.
func claimKey(db *gorm.DB, cmd *command, clientID, paymentID string, now time.Time) (bool, error) {
	var refundID *string
	if cmd.op == OpRefund {
		refundID = &cmd.newID
	}
	res, err := connOf(db).exec(`INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint,
		fingerprint_version, params, payment_id, refund_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (client_id, idempotency_key) DO NOTHING`,
		clientID, cmd.key, string(cmd.op), cmd.fp, fingerprintVersion, cmd.encoded, paymentID, refundID, now)
	if err != nil {
		return false, fmt.Errorf("claim key: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// forgetKey deletes a key found past its TTL, checking its age again, so
// that a key renewed meanwhile by another request survives. The request
// that found it then goes round again and claims it as new.
func forgetKey(db *gorm.DB, id int64, expiredBefore time.Time) error {
	if _, err := connOf(db).exec(`DELETE FROM idempotency_keys WHERE id = $1 AND created_at < $2`, id, expiredBefore); err != nil {
		return fmt.Errorf("forget expired key: %w", err)
	}
	return nil
}

// createdPayment is the payment a create makes at now: captured, or only
// authorized when the request asked so. Both stores write exactly this,
// so the answer is built here rather than read back from the database.
func createdPayment(cmd *command, now time.Time) Payment {
	p := Payment{
		ID: cmd.newID, ClientID: cmd.clientID, IdempotencyKey: cmd.key, Amount: cmd.amount, Method: cmd.method,
		CreatedAt: now, Status: StatusAuthorized,
		Captured: Money{Currency: cmd.amount.Currency}, Refunded: Money{Currency: cmd.amount.Currency},
	}
	if cmd.capture {
		p.Status, p.Captured, p.CapturedAt = StatusCaptured, cmd.amount, now
	}
	return p
}

// insertPayment creates the payment a create claimed the key for.
func insertPayment(db *gorm.DB, cmd *command, now time.Time) (Payment, error) {
	p := createdPayment(cmd, now)
	var capturedAt *time.Time
	if cmd.capture {
		capturedAt = &now
	}
	_, err := connOf(db).exec(`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method,
		created_at, status, captured_minor, refunded_minor, captured_at, replay_count, rejected_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, 0, 0)`,
		p.ID, p.ClientID, p.IdempotencyKey, p.Amount.Minor, p.Amount.Currency, string(p.Method),
		now, string(p.Status), p.Captured.Minor, capturedAt)
	if err != nil {
		return Payment{}, fmt.Errorf("insert payment: %w", err)
	}
	return p, nil
}

// insertRefund creates the refund an applied refund request made.
func insertRefund(db *gorm.DB, cmd *command, p Payment, amount int64, now time.Time) (*Refund, error) {
	r := Refund{ID: cmd.newID, PaymentID: p.ID, Amount: Money{Minor: amount, Currency: p.Amount.Currency},
		Reason: cmd.reason, IdempotencyKey: cmd.key, CreatedAt: now}
	_, err := connOf(db).exec(`INSERT INTO refunds (id, payment_id, amount_minor, reason, idempotency_key, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, r.ID, r.PaymentID, amount, r.Reason, r.IdempotencyKey, now)
	if err != nil {
		return nil, fmt.Errorf("insert refund: %w", err)
	}
	return &r, nil
}

// attempt is the row a request records on a payment.
type attempt struct {
	paymentID  string
	outcome    Outcome
	heldParams *string
	refusal    string
	refundID   *string
}

// insertAttempt records cmd's attempt.
func insertAttempt(db *gorm.DB, cmd *command, a attempt, now time.Time) error {
	_, err := connOf(db).exec(`INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at,
		params, held_params, refusal, refund_id, transport, actor, actor_address, differing_fields)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, '')`,
		a.paymentID, string(cmd.op), cmd.key, string(a.outcome), now, cmd.encoded, a.heldParams, a.refusal,
		a.refundID, cmd.Transport, cmd.Actor, cmd.Address)
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	return nil
}

// The counter updates: the first replay and the first rejection of a
// payment's keys also stamp it (see models.Payment.ReplayedAt).
const (
	countReplaySQL    = `UPDATE payments SET replay_count = replay_count + 1, replayed_at = COALESCE(replayed_at, $1) WHERE id = $2 RETURNING ` + paymentColumns
	countRejectionSQL = `UPDATE payments SET rejected_count = rejected_count + 1, rejected_at = COALESCE(rejected_at, $1) WHERE id = $2 RETURNING ` + paymentColumns
)

// notBefore is when a replay or rejection of the held key happened: now,
// or just after the key's first use if that is later. now is read before
// the request reaches the database; one that waited while another request
// used the key and committed would otherwise be recorded before the use it
// replays ("decided_attempt" in the SQL statements does the same).
func notBefore(now time.Time, held *heldKey) time.Time {
	if held == nil {
		return now
	}
	if after := held.createdAt.Add(time.Microsecond); after.After(now) {
		return after.UTC()
	}
	return now
}

// recordAttempt records a replay, rejection or refusal of cmd on payment
// paymentID, counts it, and answers with the payment as it is now (and,
// for a replayed refund, its refund).
func recordAttempt(db *gorm.DB, cmd *command, outcome Outcome, paymentID string, held *heldKey, refused error, now time.Time) (answer, error) {
	now = notBefore(now, held)
	row := attempt{paymentID: paymentID, outcome: outcome}
	count := ""
	switch outcome {
	case OutcomeReplayed:
		if held.refundID != "" {
			row.refundID = &held.refundID
		}
		count = countReplaySQL
	case OutcomeRejected:
		heldParams := held.params.encode()
		row.heldParams = &heldParams
		count = countRejectionSQL
	case OutcomeRefused:
		row.refusal = refusalCode(refused)
	default:
		return answer{}, fmt.Errorf("record attempt: unexpected outcome %s", outcome)
	}
	if err := insertAttempt(db, cmd, row, now); err != nil {
		return answer{}, err
	}

	a := answer{kind: answerSettled, outcome: outcome, held: held, refused: refused}
	var ok bool
	var err error
	if count != "" {
		a.payment, err = scanPayment(connOf(db).queryRow(count, now, paymentID).Scan)
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	} else {
		a.payment, ok, err = readPayment(db, paymentID)
	}
	if err != nil {
		return answer{}, fmt.Errorf("count attempt: %w", err)
	}
	if !ok {
		return answer{}, errors.New("count attempt: the payment is missing")
	}
	if outcome == OutcomeReplayed && held.refundID != "" {
		if a.refund, err = readRefund(db, held.refundID, a.payment); err != nil {
			return answer{}, err
		}
	}
	return a, nil
}
