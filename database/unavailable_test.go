package database_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ncruces/go-sqlite3"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// sqlState returns err's SQLSTATE, or "" when the server sent none.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func open(t *testing.T, url string, opts database.Options) *gorm.DB {
	t.Helper()
	db, err := database.Open(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(db) })
	return db
}

// conn returns one pooled connection of db and its backend's process id.
func conn(t *testing.T, db *gorm.DB) (*sql.Conn, int) {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	c, err := sqlDB.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var pid int
	if err := c.QueryRowContext(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return c, pid
}

// closedPort returns a loopback port nobody listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Every case provokes the failure for real, on a real server, and checks
// the error that comes back the way the server's code gets it.
func TestIsUnavailablePostgres(t *testing.T) {
	t.Parallel()

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		// Open pings: its error is the first a server would see.
		_, err := database.Open(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", closedPort(t)), database.Options{})
		var connectErr *pgconn.ConnectError
		if !errors.As(err, &connectErr) || !database.IsUnavailable(err) {
			t.Errorf("ping a closed port: %v (%T), want an unavailable *pgconn.ConnectError", err, err)
		}
	})

	t.Run("read-only transaction 25006", func(t *testing.T) {
		t.Parallel()
		db := dbtest.Postgres(t).Gorm
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`SET TRANSACTION READ ONLY`).Error; err != nil {
				return err
			}
			return tx.Exec(`DELETE FROM payments`).Error
		})
		if sqlState(err) != "25006" || !database.IsUnavailable(err) {
			t.Errorf("a write in a read-only transaction: %v, want 25006, unavailable", err)
		}
	})

	t.Run("session terminated 57P01", func(t *testing.T) {
		t.Parallel()
		db := open(t, dbtest.ServerURL(t), database.Options{MaxOpenConns: 2})
		victim, pid := conn(t, db)
		var done bool
		if err := db.Raw(`SELECT pg_terminate_backend(?)`, pid).Scan(&done).Error; err != nil || !done {
			t.Fatalf("pg_terminate_backend: %v %v", done, err)
		}
		// The backend sends its FATAL and exits; the next statement meets it.
		_, err := victim.ExecContext(t.Context(), `SELECT 1`)
		if err == nil || !database.IsUnavailable(err) {
			t.Errorf("a statement on a terminated session: %v (%T), want unavailable", err, err)
		}
		t.Logf("SQLSTATE %q: %v", sqlState(err), err)
	})

	t.Run("a statement that must be unavailable is not a bug", func(t *testing.T) {
		t.Parallel()
		db := dbtest.Postgres(t).Gorm
		for _, q := range []string{`SELECT * FROM no_such_table`, `SELECT 1/0`,
			`INSERT INTO idempotency_keys (client_id, idempotency_key, fingerprint, fingerprint_version, payment_id, created_at)
			 VALUES ('c', 'k', 'x', 1, 'p1', now()), ('c', 'k', 'y', 1, 'p2', now())`} {
			err := db.Exec(q).Error
			if err == nil || database.IsUnavailable(err) {
				t.Errorf("%s: %v, want an error that is not unavailable", q, err)
			}
		}
	})

	t.Run("pool exhausted", func(t *testing.T) {
		t.Parallel()
		db := open(t, dbtest.ServerURL(t), database.Options{MaxOpenConns: 1})
		conn(t, db) // holds the only connection
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		var one int
		err := db.WithContext(ctx).Raw(`SELECT 1`).Scan(&one).Error
		if !database.IsUnavailable(err) {
			t.Errorf("no connection free in time: %v, want unavailable", err)
		}
	})
}

// A server that accepts connections and never answers (a black hole: a
// hung host, a half-open firewall) must not hold a request for long: the
// default connect timeout ends each attempt.
func TestConnectTimeoutDefault(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c // read nothing, answer nothing, keep it open
		}
	}()
	defer func() {
		l.Close()
		for c := range accepted {
			c.Close()
		}
	}()

	for _, tc := range []struct {
		query string
		want  time.Duration
	}{
		{"", database.DefaultConnectTimeout},
		{"&connect_timeout=1", time.Second}, // the URL's own setting wins
	} {
		start := time.Now()
		// Open pings, with no deadline of its own.
		_, err := database.Open("postgres://postgres@"+l.Addr().String()+"/postgres?sslmode=disable"+tc.query, database.Options{})
		took := time.Since(start)
		if !database.IsUnavailable(err) {
			t.Errorf("%q: ping a black hole: %v, want unavailable", tc.query, err)
		}
		if took < tc.want-100*time.Millisecond || took > tc.want+time.Second {
			t.Errorf("%q: ping a black hole took %s, want about %s", tc.query, took, tc.want)
		}
		t.Logf("%q: gave up after %s: %v", tc.query, took.Round(time.Millisecond), err)
	}
}

// A pooled connection to a server that has since stopped answering (frozen
// behind a proxy: nothing refused, nothing reset) must not hold a read
// without a deadline for ever: the liveness check pgx runs on a connection
// idle for over a second has a deadline of its own, and the connection that
// replaces it meets the connect timeout.
func TestBlackholedPooledConnection(t *testing.T) {
	t.Parallel()
	proxy, url := dbtest.ProxyURL(t, dbtest.ServerURL(t))
	db := open(t, url, database.Options{MaxOpenConns: 1})
	var one int
	if err := db.Raw(`SELECT 1`).Scan(&one).Error; err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // idle long enough for pgx to check it before reuse
	proxy.Freeze()

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- db.WithContext(context.Background()).Raw(`SELECT 1`).Scan(&one).Error }()
	limit := 2*time.Second + database.DefaultConnectTimeout + 2*time.Second
	select {
	case err := <-done:
		if !database.IsUnavailable(err) {
			t.Errorf("a read on a black-holed connection: %v, want unavailable", err)
		}
		t.Logf("a read on a black-holed pooled connection failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(limit):
		t.Fatalf("a read on a black-holed pooled connection still waits after %s", limit)
	}
}

// Server-side failures that need a server of the test's own.
func TestIsUnavailableServerStates(t *testing.T) {
	t.Parallel()
	cluster := dbtest.StartCluster(t)

	// Another backend crashes: the postmaster ends every session (57P02)
	// and recovers, refusing connections meanwhile (57P03).
	db := open(t, cluster.URL, database.Options{MaxOpenConns: 4})
	survivor, _ := conn(t, db)
	_, crashing := conn(t, db)
	if err := syscall.Kill(crashing, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = survivor.ExecContext(t.Context(), `SELECT 1`)
	}
	if !database.IsUnavailable(err) {
		t.Errorf("a session after another backend crashed: %v (%T), want unavailable", err, err)
	}
	t.Logf("after a crash: SQLSTATE %q: %v", sqlState(err), err)

	// Smart shutdown: sessions may finish, new ones are refused with 57P03.
	waitFor(t, 30*time.Second, func() bool { return database.Ping(t.Context(), db) == nil })
	holder, _ := conn(t, db)
	cluster.BeginSmartShutdown()
	waitFor(t, 10*time.Second, func() bool {
		_, err = database.Open(cluster.URL, database.Options{})
		return sqlState(err) == "57P03"
	})
	if !database.IsUnavailable(err) {
		t.Errorf("connect during shutdown: %v, want unavailable", err)
	}
	_ = holder // held open until the test ends, so the shutdown stays under way
}

func waitFor(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIsUnavailableSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "busy.db")
	db := open(t, "sqlite:"+path, database.Options{})
	if err := db.Exec(`CREATE TABLE t (x INTEGER)`).Error; err != nil {
		t.Fatal(err)
	}

	t.Run("busy", func(t *testing.T) {
		// One handle holds the write lock; another, with a short busy
		// timeout, gives up on it.
		sqlDB, _ := db.DB()
		holder, err := sqlDB.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		defer holder.ExecContext(context.Background(), `ROLLBACK`)
		other := open(t, "sqlite:"+path+"?_pragma=busy_timeout(50)", database.Options{})
		err = other.Exec(`INSERT INTO t VALUES (1)`).Error
		if !database.IsUnavailable(err) {
			t.Errorf("write while another holds the lock: %v, want unavailable", err)
		}
	})

	t.Run("locked", func(t *testing.T) {
		// A table cannot be dropped while a statement of the same
		// connection still reads it: SQLITE_LOCKED.
		sqlDB, _ := db.DB()
		c, err := sqlDB.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, q := range []string{`CREATE TABLE l (x INTEGER)`, `INSERT INTO l VALUES (1), (2)`} {
			if _, err := c.ExecContext(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := c.QueryContext(t.Context(), `SELECT x FROM l`)
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		_, err = c.ExecContext(t.Context(), `DROP TABLE l`)
		rows.Close()
		if !database.IsUnavailable(err) {
			t.Errorf("drop a table being read: %v, want unavailable", err)
		}
	})

	t.Run("interrupted at its deadline", func(t *testing.T) {
		// A statement still running when its context's deadline passes
		// is interrupted by the driver (SQLITE_INTERRUPT), which says
		// nothing of a timeout.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		err := db.WithContext(ctx).Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`).Error
		if code, ok := database.SQLiteCode(err); !ok || code&0xff != int(sqlite3.INTERRUPT) {
			t.Fatalf("a statement past its deadline: %v (%T), want SQLITE_INTERRUPT", err, err)
		}
		if !database.IsUnavailable(err) {
			t.Errorf("a statement interrupted at its deadline: %v, want unavailable", err)
		}
	})

	t.Run("read-only file is not transient", func(t *testing.T) {
		ro := open(t, "sqlite:"+path+"?mode=ro", database.Options{})
		err := ro.Exec(`INSERT INTO t VALUES (1)`).Error
		if code, ok := database.SQLiteCode(err); !ok || code&0xff != int(sqlite3.READONLY) {
			t.Fatalf("write to a read-only file: %v (%T), want SQLITE_READONLY", err, err)
		}
		if database.IsUnavailable(err) {
			t.Errorf("a read-only file is unavailable: %v; it needs an operator, not a retry", err)
		}
	})
}

// The classification of errors the cases above cannot provoke on demand,
// as the drivers return them.
func TestIsUnavailableClassifies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("something else"), false},
		{context.Canceled, false},
		{gorm.ErrRecordNotFound, false},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "40001"}, false},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "08001"}, true},
		{&pgconn.PgError{Code: "08P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{fmt.Errorf("create statement: %w", &pgconn.PgError{Code: "25006"}), true},
		{driver.ErrBadConn, true},
		{fmt.Errorf("create payment: %w", sql.ErrConnDone), true},
		{pgconn.ErrConnClosed, true},
		{fmt.Errorf("waiting for the create statement: %w", context.DeadlineExceeded), true},
		{io.ErrUnexpectedEOF, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
	} {
		if got := database.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
