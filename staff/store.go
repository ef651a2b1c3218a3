package staff

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/models"
)

// store is the seam between a Store and a database: the statements the
// Store runs (queries) on the pool, in a transaction of its own (tx) or in
// another package's (in), and the audit page's reads, which differ
// between the dialects in how they are planned (auditEntries,
// adminAttempts) or bound (currencies: SQLite binds no arrays). The Store
// decides what to run and when; a store only runs it. One test suite runs
// against both implementations (store_test.go).
type store interface {
	queries
	// tx runs f in a transaction: committed when f returns nil, rolled
	// back otherwise.
	tx(ctx context.Context, f func(q queries) error) error
	// in runs the queries in tx, another package's transaction.
	in(tx sqlq.Runner) queries
	// auditEntries reads the audit table's side of the log (auditRead).
	auditEntries(ctx context.Context, r auditRead) ([]auditRow, error)
	// adminAttempts reads the payments' side of the log: the admin's
	// captures, cancels and refunds (auditRead; its action is an
	// operation of the payments engine).
	adminAttempts(ctx context.Context, r auditRead) ([]auditRow, error)
	// currencies maps each of the payments ids to its currency; an id
	// that names no payment is left out.
	currencies(ctx context.Context, ids []string) (map[string]string, error)
}

// queries are what a Store reads and writes, in its own terms.
type queries interface {
	// account reads the account username (normalised); ok is false when
	// there is none.
	account(ctx context.Context, username string) (row models.StaffAccount, ok bool, err error)
	// accounts reads every account, by username.
	accounts(ctx context.Context) ([]models.StaffAccount, error)
	// addAccount stores a new account unless its username is taken, and
	// says whether it did.
	addAccount(ctx context.Context, a models.StaffAccount) (bool, error)
	// setPassword sets the account id's password hash at at, whatever it
	// was, and clears its must-change flag.
	setPassword(ctx context.Context, id int64, hash string, at time.Time) error
	// changePassword is setPassword only while the hash is still old; it
	// says whether it was.
	changePassword(ctx context.Context, id int64, old, hash string, at time.Time) (bool, error)
	// rehashPassword replaces the hash old with hash, the same password
	// with other parameters, unless it changed meanwhile.
	rehashPassword(ctx context.Context, id int64, old, hash string) error
	// setRole gives the account id role at at.
	setRole(ctx context.Context, id int64, role Role, at time.Time) error
	// disable disables the account id at at.
	disable(ctx context.Context, id int64, at time.Time) error
	// markSignIn stamps the account id's sign-in at at unless it is
	// disabled, and says whether it was not.
	markSignIn(ctx context.Context, id int64, at time.Time) (bool, error)
	// startSession stores a new session, last used when it was created
	// (its LastUsedAt is not read).
	startSession(ctx context.Context, s models.StaffSession) error
	// deleteEndedSessions deletes the sessions that expire by expired or
	// were last used by idleSince.
	deleteEndedSessions(ctx context.Context, expired, idleSince time.Time) error
	// session reads the session id with its account; ok is false when
	// there is none.
	session(ctx context.Context, id string) (row sessionRow, ok bool, err error)
	// touchSession records the session id's use at at unless one was
	// recorded after stale.
	touchSession(ctx context.Context, id string, at, stale time.Time) error
	// endSession deletes the session id.
	endSession(ctx context.Context, id string) error
	// endSessions deletes the account's sessions but except ("" for
	// none), and says how many it deleted.
	endSessions(ctx context.Context, accountID int64, except string) (int64, error)
	// appendEntry appends an entry to the audit log.
	appendEntry(ctx context.Context, e models.StaffAuditEntry) error
}

// sessionRow is a session with its account as it is now.
type sessionRow struct {
	accountID                        int64
	createdAt, lastUsedAt, expiresAt time.Time
	username, role                   string
	mustChangePassword, disabled     bool
	accountCreatedAt                 time.Time
}

// auditRead is one side's read of the audit log: up to limit entries,
// newest first, from from (inclusive) to before (exclusive) in (at, id)
// order, of actor and of action where they are not empty.
type auditRead struct {
	from   time.Time
	before position
	limit  int
	actor  string
	action string
}

// position is a place in one side of the audit log, in (at, id) order.
type position struct {
	at time.Time
	id int64
}

// newStore is the store for db's dialect.
func newStore(db *gorm.DB) (store, error) {
	return sqlq.Pick[store](db, newPostgresStore, newSQLiteStore)
}

// The statements, in sql/*.sql: common.sql holds those both dialects run
// as written.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// dbStore is what both dialects' stores are: the shared queries on the
// pool, transactions, and the audit page's reads.
type dbStore struct {
	shared
	db sqlq.DB
	// replan comes before the arguments of a read whose best plan depends
	// on them: on PostgreSQL, pgx.QueryExecModeExec, so that it is planned
	// for them every time. Cached, the generic plans of the admin's
	// attempts scanned every attempt's at index (15 ms for one staff
	// member's page, where the partial index takes 0.1), and that of an
	// action may scan the whole log for a rare one. The audit table's
	// other reads keep their cached plans, which are the right ones.
	replan []any
}

func (st dbStore) tx(ctx context.Context, f func(q queries) error) error {
	return st.db.Tx(ctx, func(tx sqlq.Runner) error { return f(st.in(tx)) })
}

func (st dbStore) in(tx sqlq.Runner) queries { return shared{r: tx, q: st.q} }

// shared runs the statements both dialects run alike (the files
// common.sql and the dialect's) on r: the pool or a transaction.
type shared struct {
	r sqlq.Runner
	q sqlq.Statements
}

// scanAccount reads a row of the account statements.
func scanAccount(row sqlq.Row) (models.StaffAccount, error) {
	var a models.StaffAccount
	err := row.Scan(&a.ID, &a.Username, &a.Role, &a.PasswordHash, &a.MustChangePassword, &a.Disabled, &a.CreatedAt, &a.LastSignInAt)
	return a, err
}

// account reads the account username names. A username PostgreSQL cannot
// hold as text (a NUL byte, bytes that are not UTF-8) is no account's, as
// on SQLite: found false without asking, where PostgreSQL would refuse the
// query (SQLSTATE 22021) and a sign-in would answer 500.
func (s shared) account(ctx context.Context, username string) (models.StaffAccount, bool, error) {
	if !storable.Text(username) {
		return models.StaffAccount{}, false, nil
	}
	a, err := scanAccount(s.r.QueryRow(ctx, s.q.SQL("account"), username))
	if errors.Is(err, sqlq.ErrNoRows) {
		return a, false, nil
	}
	if err != nil {
		return a, false, fmt.Errorf("read staff account: %w", err)
	}
	return a, true, nil
}

func (s shared) accounts(ctx context.Context) ([]models.StaffAccount, error) {
	rows, err := sqlq.Collect(ctx, s.r, s.q.SQL("accounts"), nil, scanAccount)
	if err != nil {
		return nil, fmt.Errorf("list staff accounts: %w", err)
	}
	return rows, nil
}

func (s shared) addAccount(ctx context.Context, a models.StaffAccount) (bool, error) {
	n, err := s.r.Exec(ctx, s.q.SQL("add_account"), a.Username, a.Role, a.PasswordHash, a.MustChangePassword, a.CreatedAt)
	if err != nil {
		return false, fmt.Errorf("create staff account: %w", err)
	}
	return n == 1, nil
}

func (s shared) setPassword(ctx context.Context, id int64, hash string, at time.Time) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("set_password"), id, hash, at); err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	return nil
}

func (s shared) changePassword(ctx context.Context, id int64, old, hash string, at time.Time) (bool, error) {
	n, err := s.r.Exec(ctx, s.q.SQL("change_password"), id, old, hash, at)
	if err != nil {
		return false, fmt.Errorf("change password: %w", err)
	}
	return n == 1, nil
}

func (s shared) rehashPassword(ctx context.Context, id int64, old, hash string) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("rehash_password"), id, old, hash); err != nil {
		return fmt.Errorf("rewrite password hash: %w", err)
	}
	return nil
}

func (s shared) setRole(ctx context.Context, id int64, role Role, at time.Time) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("set_role"), id, string(role), at); err != nil {
		return fmt.Errorf("change role: %w", err)
	}
	return nil
}

func (s shared) disable(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("disable_account"), id, at); err != nil {
		return fmt.Errorf("disable account: %w", err)
	}
	return nil
}

func (s shared) markSignIn(ctx context.Context, id int64, at time.Time) (bool, error) {
	n, err := s.r.Exec(ctx, s.q.SQL("mark_sign_in"), id, at)
	if err != nil {
		return false, fmt.Errorf("record sign-in: %w", err)
	}
	return n == 1, nil
}

func (s shared) startSession(ctx context.Context, ss models.StaffSession) error {
	_, err := s.r.Exec(ctx, s.q.SQL("start_session"), ss.ID, ss.AccountID, ss.CreatedAt, ss.ExpiresAt, ss.Address)
	if err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	return nil
}

func (s shared) deleteEndedSessions(ctx context.Context, expired, idleSince time.Time) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("delete_ended_sessions"), expired, idleSince); err != nil {
		return fmt.Errorf("delete ended sessions: %w", err)
	}
	return nil
}

func (s shared) session(ctx context.Context, id string) (sessionRow, bool, error) {
	var r sessionRow
	err := s.r.QueryRow(ctx, s.q.SQL("session"), id).Scan(&r.accountID, &r.createdAt, &r.lastUsedAt, &r.expiresAt,
		&r.username, &r.role, &r.mustChangePassword, &r.disabled, &r.accountCreatedAt)
	if errors.Is(err, sqlq.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("read session: %w", err)
	}
	return r, true, nil
}

func (s shared) touchSession(ctx context.Context, id string, at, stale time.Time) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("touch_session"), id, at, stale); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

func (s shared) endSession(ctx context.Context, id string) error {
	if _, err := s.r.Exec(ctx, s.q.SQL("end_session"), id); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

func (s shared) endSessions(ctx context.Context, accountID int64, except string) (int64, error) {
	n, err := s.r.Exec(ctx, s.q.SQL("end_account_sessions"), accountID, except)
	if err != nil {
		return 0, fmt.Errorf("end sessions: %w", err)
	}
	return n, nil
}

func (s shared) appendEntry(ctx context.Context, e models.StaffAuditEntry) error {
	_, err := s.r.Exec(ctx, s.q.SQL("insert_audit_entry"), e.At, e.Actor, e.Address, e.Action, e.Target, e.Outcome, e.Detail)
	if err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	return nil
}

func (st dbStore) auditEntries(ctx context.Context, r auditRead) ([]auditRow, error) {
	query, args := st.q.SQL("audit_entries"), []any{r.from, r.before.at, r.before.id, r.limit}
	switch {
	case r.actor != "":
		query, args = st.q.SQL("audit_entries_by_actor"), append(args, r.actor, r.action)
	case r.action != "":
		query, args = st.q.SQL("audit_entries_by_action"), slices.Concat(st.replan, args, []any{r.action})
	}
	rows, err := sqlq.Collect(ctx, st.db, query, args, func(row sqlq.Row) (auditRow, error) {
		a := auditRow{Src: srcStaff}
		err := row.Scan(&a.At, &a.ID, &a.Actor, &a.Address, &a.Action, &a.Target, &a.Outcome, &a.Detail)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return rows, nil
}

func (st dbStore) adminAttempts(ctx context.Context, r auditRead) ([]auditRow, error) {
	query, args := st.q.SQL("admin_attempts"), slices.Concat(st.replan, []any{r.from, r.before.at, r.before.id, r.limit, r.action})
	if r.actor != "" {
		query, args = st.q.SQL("admin_attempts_by_actor"), append(args, r.actor)
	}
	rows, err := sqlq.Collect(ctx, st.db, query, args, func(row sqlq.Row) (auditRow, error) {
		a := auditRow{Src: srcPayment}
		err := row.Scan(&a.At, &a.ID, &a.Actor, &a.Address, &a.Action, &a.Target, &a.Outcome, &a.Detail, &a.Params)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return rows, nil
}

// paymentCurrency is a row of payment_currencies.
type paymentCurrency struct{ id, currency string }

func scanCurrency(row sqlq.Row) (paymentCurrency, error) {
	var c paymentCurrency
	err := row.Scan(&c.id, &c.currency)
	return c, err
}

// currencyMap turns the rows of payment_currencies into a map, or wraps
// the error that reading them met.
func currencyMap(rows []paymentCurrency, err error) (map[string]string, error) {
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.id] = r.currency
	}
	return out, nil
}
