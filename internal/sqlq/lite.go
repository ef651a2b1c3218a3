package sqlq

import (
	"context"
	"database/sql"
	"regexp"
	"sync"
)

// Lite runs statements on SQLite through database/sql, each prepared once
// per pool: SQLite spends as long parsing a small statement as running it.
//
// A statement is prepared on the pool, which needs a free connection, and
// CMPay's SQLite pool has one, which the transaction that first meets the
// statement holds: so the statement runs unprepared then, and is prepared
// after that transaction ends, for every later one.
type Lite struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
	// texts caches each query's SQLite spelling (placeholders).
	texts sync.Map
}

// NewLite runs statements on db, a pool of the SQLite driver.
func NewLite(db *sql.DB) *Lite { return &Lite{db: db} }

// Tx runs f in a transaction: committed when f returns nil, rolled back
// otherwise. The statements f met unprepared are prepared once it is over.
func (l *Lite) Tx(ctx context.Context, f func(Runner) error) error {
	defer l.prepareWanted(ctx)
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(liteRunner{l: l, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Exec runs query on the pool.
func (l *Lite) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return liteRunner{l: l}.Exec(ctx, query, args...)
}

// QueryRow runs query on the pool.
func (l *Lite) QueryRow(ctx context.Context, query string, args ...any) Row {
	return liteRunner{l: l}.QueryRow(ctx, query, args...)
}

// Query runs query on the pool.
func (l *Lite) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	return liteRunner{l: l}.Query(ctx, query, args, each)
}

// DB is the pool, for what database/sql does itself (a ping).
func (l *Lite) DB() *sql.DB { return l.db }

// liteRunner runs statements in tx, or on the pool when tx is nil.
type liteRunner struct {
	l  *Lite
	tx *sql.Tx
}

// placeholder is PostgreSQL's $n, which SQLite would read as a parameter
// named "$n" and number in order of appearance: written ?n, it is the n-th
// argument wherever it first appears.
var placeholder = regexp.MustCompile(`\$(\d+)`)

// text is query with SQLite's placeholders.
func (l *Lite) text(query string) string {
	if t, ok := l.texts.Load(query); ok {
		return t.(string)
	}
	t := placeholder.ReplaceAllString(query, "?$1")
	l.texts.Store(query, t)
	return t
}

func (r liteRunner) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if stmt := r.statement(ctx, query); stmt != nil {
		res, err = stmt.ExecContext(ctx, args...)
	} else if r.tx != nil {
		res, err = r.tx.ExecContext(ctx, r.l.text(query), args...)
	} else {
		res, err = r.l.db.ExecContext(ctx, r.l.text(query), args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (r liteRunner) QueryRow(ctx context.Context, query string, args ...any) Row {
	if stmt := r.statement(ctx, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	if r.tx != nil {
		return r.tx.QueryRowContext(ctx, r.l.text(query), args...)
	}
	return r.l.db.QueryRowContext(ctx, r.l.text(query), args...)
}

func (r liteRunner) Query(ctx context.Context, query string, args []any, each func(Row) error) error {
	var rows *sql.Rows
	var err error
	if stmt := r.statement(ctx, query); stmt != nil {
		rows, err = stmt.QueryContext(ctx, args...)
	} else if r.tx != nil {
		rows, err = r.tx.QueryContext(ctx, r.l.text(query), args...)
	} else {
		rows, err = r.l.db.QueryContext(ctx, r.l.text(query), args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// statement is query prepared for r's transaction, or nil when r is not a
// transaction or query is not prepared yet. On the pool, database/sql's own
// statement would need a connection of its own, which SQLite's pool of one
// may not have free: statements run unprepared there.
func (r liteRunner) statement(ctx context.Context, query string) *sql.Stmt {
	if r.tx == nil {
		return nil
	}
	l := r.l
	l.mu.Lock()
	stmt := l.stmts[query]
	if stmt == nil {
		if l.wanted == nil {
			l.wanted = map[string]bool{}
		}
		l.wanted[query] = true
	}
	l.mu.Unlock()
	if stmt == nil {
		return nil
	}
	// Prepared on the pool, the statement is prepared once per connection
	// and reused by every transaction that runs on that connection.
	return r.tx.StmtContext(ctx, stmt)
}

// prepareWanted prepares the statements transactions met unprepared. It
// must run outside a transaction, and holds no lock while it waits for a
// connection: a transaction holding it may be asking for a statement. A
// statement that fails to prepare stays wanted and runs unprepared, where
// its error shows.
func (l *Lite) prepareWanted(ctx context.Context) {
	l.mu.Lock()
	var queries []string
	for q := range l.wanted {
		queries = append(queries, q)
	}
	l.mu.Unlock()
	for _, q := range queries {
		stmt, err := l.db.PrepareContext(ctx, l.text(q))
		if err != nil {
			continue
		}
		l.mu.Lock()
		if l.stmts == nil {
			l.stmts = map[string]*sql.Stmt{}
		}
		if _, ok := l.stmts[q]; ok {
			_ = stmt.Close() // prepared meanwhile, after another transaction
		} else {
			l.stmts[q] = stmt
		}
		delete(l.wanted, q)
		l.mu.Unlock()
	}
}
