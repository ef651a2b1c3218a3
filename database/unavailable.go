package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ncruces/go-sqlite3"
)

// IsUnavailable reports whether err means that the database could not serve
// the request now but may shortly: it cannot be reached, it is restarting or
// failing over, it is read-only (a demoted primary), or it did not answer in
// time. The request did not complete, and sending it again later, with the
// same idempotency key, is safe and is what the client should do. That is
// the difference from an internal error, which retrying will not fix.
//
// It is the one place this is decided; apierror turns it into
// SERVICE_UNAVAILABLE (REST: 503 with Retry-After).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	// Checked before *pgconn.PgError: a failed connection attempt may wrap
	// the server's reason (a PgError such as 57P03), and whatever it is, no
	// connection means no service.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableSQLState(pgErr.Code)
	}
	if code, ok := SQLiteCode(err); ok {
		return unavailableSQLiteCode(code)
	}
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, pgconn.ErrConnClosed):
		// database/sql and pgx give up on a connection that broke.
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// The database did not answer in time, or no pooled connection
		// came free in time: the request's deadline passed while it waited.
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The server closed the connection mid-conversation (pgx returns
		// the reader's error as is when the socket is cut).
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		// Connection refused or reset, no route, a read or write timeout.
		return true
	}
	return false
}

// unavailableSQLState says which PostgreSQL errors mean "not now" rather
// than "never" (https://www.postgresql.org/docs/current/errcodes-appendix.html).
func unavailableSQLState(code string) bool {
	switch code {
	case "25006", // read_only_sql_transaction: a standby, or a primary demoted under us
		"57P01", // admin_shutdown: the server is stopping, or pg_terminate_backend
		"57P02", // crash_shutdown: another backend crashed, the server restarts
		"57P03", // cannot_connect_now: starting up, shutting down, in recovery
		"53300": // too_many_connections: the server refuses more sessions for now
		return true
	}
	// Class 08, connection exceptions: the connection failed or was refused.
	return strings.HasPrefix(code, "08")
}

// SQLite result codes (https://sqlite.org/rescode.html). The driver reports
// extended codes; the low byte is the primary one.
const (
	sqliteBusy              = 5
	sqliteLocked            = 6
	sqliteReadonly          = 8
	sqliteInterrupt         = 9
	sqliteReadonlyRecovery  = sqliteReadonly | 1<<8 // another connection is recovering the WAL
	sqliteReadonlyCantlock  = sqliteReadonly | 2<<8 // the WAL's shared memory cannot be locked yet
	sqliteReadonlyRollback  = sqliteReadonly | 3<<8 // a hot journal awaits rollback by another connection
	sqliteReadonlyCantinit  = sqliteReadonly | 5<<8 // the WAL's shared memory cannot be set up yet
	sqlitePrimaryResultMask = 0xff
)

// unavailableSQLiteCode says which SQLite errors mean "try again": another
// writer holds the lock past the busy timeout, the file is being
// recovered, or a statement was interrupted at its deadline. A file that is read-only for good (permissions, a moved file)
// is not among them: that needs an operator, and its error is logged in
// full as an internal one.
func unavailableSQLiteCode(code int) bool {
	switch code {
	case sqliteReadonlyRecovery, sqliteReadonlyCantlock, sqliteReadonlyRollback, sqliteReadonlyCantinit:
		return true
	}
	switch code & sqlitePrimaryResultMask {
	case sqliteBusy, sqliteLocked:
		return true
	case sqliteInterrupt:
		// The driver interrupts a statement when its context ends: a
		// deadline passed (the database too slow to answer in time), or
		// the client went away, who reads no answer.
		return true
	}
	return false
}

// SQLiteCode is the extended result code of a SQLite error, which the
// driver returns as an *sqlite3.Error, or as a bare code when there is no
// more to say.
func SQLiteCode(err error) (int, bool) {
	var withMessage *sqlite3.Error
	var extended sqlite3.ExtendedErrorCode
	var primary sqlite3.ErrorCode
	switch {
	case errors.As(err, &withMessage):
		return int(withMessage.ExtendedCode()), true
	case errors.As(err, &extended):
		return int(extended), true
	case errors.As(err, &primary):
		return int(primary), true
	}
	return 0, false
}
