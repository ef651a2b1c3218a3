// Package database opens the database a DATABASE_URL names, PostgreSQL or
// the embedded SQLite, and migrates its schema.
package database

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/cmpay/cmpay/internal/iso4217"
	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// DefaultURL is the embedded default: a SQLite file in the working directory.
const DefaultURL = "sqlite:cmpay.db"

// DefaultConnectTimeout bounds each attempt to connect to one PostgreSQL
// host when the URL sets no connect_timeout (or sets 0, "for ever"): long
// enough for a loaded server to accept and authenticate a session, short
// enough that a request finds out quickly that the database is unreachable
// and answers SERVICE_UNAVAILABLE, and that pgx moves on to the next host of
// a multi-host URL when the first is down without refusing connections.
const DefaultConnectTimeout = 3 * time.Second

// Options tunes a connection pool. The zero value is usable.
type Options struct {
	// MaxOpenConns caps the pool; zero means 20 on PostgreSQL and 1 on
	// SQLite, which has one writer at a time anyway: with one connection,
	// writers queue in order in the pool instead of polling SQLite's busy
	// handler, which sleeps in growing steps (measured: higher throughput,
	// shorter tail).
	MaxOpenConns int
	// Logger receives slow-query and error reports; nil means slog.Default.
	Logger *slog.Logger
	// Tracer, on PostgreSQL, sees every statement sent, BEGIN and COMMIT
	// included: what tests count round trips with.
	Tracer pgx.QueryTracer
}

// Open connects to the database url names:
//
//	postgres://… or postgresql://…   PostgreSQL (any pgx connection URL)
//	sqlite:PATH or file:PATH          SQLite, PATH relative to the working directory
//	"" (DATABASE_URL not set)         DefaultURL
//
// It does not migrate; call Migrate.
func Open(rawURL string, opts Options) (*gorm.DB, error) {
	if rawURL == "" {
		rawURL = DefaultURL
	}
	dialector, kind, err := dialectorFor(rawURL, opts.Tracer)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	db, err := openGorm(dialector, log)
	// Processes opening one new SQLite file at once race to switch it to
	// WAL, and SQLite answers the losers "busy" at once, without its busy
	// timeout: open again, for as long as that timeout would have waited.
	for deadline := time.Now().Add(sqliteBusyTimeout); err != nil && kind == "sqlite" && time.Now().Before(deadline); {
		code, ok := SQLiteCode(err)
		if !ok || !unavailableSQLiteCode(code) {
			break
		}
		time.Sleep(20 * time.Millisecond)
		db, err = openGorm(dialector, log)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", kind, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", kind, err)
	}
	maxOpen := opts.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = 20
		if kind == "sqlite" {
			maxOpen = 1
		}
	}
	sqlDB.SetMaxOpenConns(maxOpen)
	sqlDB.SetMaxIdleConns(maxOpen)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// openGorm opens a pool on dialector and pings it. A fresh gorm.Config
// per connection: sharing one between two Opens mixes their dialects up.
func openGorm(dialector gorm.Dialector, log *slog.Logger) (*gorm.DB, error) {
	db, err := gorm.Open(dialector, &gorm.Config{
		// Each write that needs a transaction opens one itself.
		SkipDefaultTransaction: true,
		TranslateError:         true,
		Logger:                 newGormLogger(log),
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		// gorm.Open has made the pool before its ping failed: close it, or
		// every failed attempt (a replica that is down, retried each
		// second) leaves a pool and its goroutine behind.
		if db != nil {
			if sqlDB, dbErr := db.DB(); dbErr == nil {
				_ = sqlDB.Close()
			}
		}
		return nil, err
	}
	return db, nil
}

// sqliteBusyTimeout is how long a SQLite connection waits for a lock.
const sqliteBusyTimeout = 10 * time.Second

// dialectorFor picks the driver for a DATABASE_URL.
func dialectorFor(rawURL string, tracer pgx.QueryTracer) (gorm.Dialector, string, error) {
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, "", fmt.Errorf("DATABASE_URL %q: want postgres://…, sqlite:PATH or file:PATH", redact(rawURL))
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		cfg, err := pgx.ParseConfig(rawURL)
		if err != nil {
			return nil, "", fmt.Errorf("DATABASE_URL %q: %w", redact(rawURL), err)
		}
		cfg.Tracer = tracer
		if cfg.ConnectTimeout == 0 {
			// Without a timeout, a connection attempt to a host that is
			// gone (packets dropped, no refusal) waits for the request's
			// deadline, or for the kernel to give up minutes later.
			cfg.ConnectTimeout = DefaultConnectTimeout
		}
		return postgres.New(postgres.Config{Conn: stdlib.OpenDB(*cfg, stdlib.OptionShouldPing(pingBeforeReuse))}), "postgres", nil
	case "sqlite", "file":
		dsn, err := sqliteDSN(rest)
		if err != nil {
			return nil, "", err
		}
		return gormlite.Open(dsn), "sqlite", nil
	}
	return nil, "", fmt.Errorf("DATABASE_URL %q: unknown scheme %q; want postgres://…, sqlite:PATH or file:PATH", redact(rawURL), scheme)
}

// reusePingTimeout bounds the liveness check of a pooled connection.
const reusePingTimeout = 2 * time.Second

// pingBeforeReuse is pgx's check of a pooled connection that has been idle
// for over a second (pgx's own rule), given a deadline of its own. pgx pings
// with the caller's context, which for a read has none: a connection to a
// server that has stopped answering without closing anything (a hung host,
// a network that drops packets) would hold the request, and the connection,
// for ever. A ping that fails closes the connection; returning true then
// lets pgx's own ping find it closed and tell database/sql to take another,
// which meets the connect timeout if the server is still gone.
func pingBeforeReuse(ctx context.Context, p stdlib.ShouldPingParams) bool {
	if p.IdleDuration <= time.Second {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, reusePingTimeout)
	defer cancel()
	return p.Conn.PgConn().Ping(ctx) != nil
}

// sqliteDSN turns "PATH[?params]" into the driver's DSN with the settings a
// server needs, unless the URL sets them itself:
//   - WAL, so readers (the admin UI) never wait for the writer;
//   - a busy timeout, so concurrent writers queue instead of failing;
//   - BEGIN IMMEDIATE, so a transaction takes the write lock up front and
//     two never deadlock upgrading from read to write;
//   - synchronous=FULL, so a commit is on disk before the API acknowledges
//     it: with NORMAL, WAL commits are synced only at checkpoints and a
//     power cut can take back payments clients were told about. The group
//     commit (payments.sqliteStore) shares each fsync among every request
//     queued meanwhile;
//   - foreign keys enforced.
func sqliteDSN(rest string) (string, error) {
	path, rawQuery, _ := strings.Cut(rest, "?")
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return "", fmt.Errorf("DATABASE_URL: sqlite needs a file path, as in sqlite:cmpay.db")
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: sqlite parameters: %w", err)
	}
	// In this order: the busy timeout first, so that the others wait for a
	// lock too (switching a new file to WAL takes one).
	given := q["_pragma"]
	pragmas := strings.Join(given, " ")
	q.Del("_pragma")
	for _, p := range [][2]string{
		{"busy_timeout", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds())},
		{"journal_mode", "journal_mode(WAL)"},
		{"synchronous", "synchronous(FULL)"},
		{"foreign_keys", "foreign_keys(1)"},
	} {
		if !strings.Contains(pragmas, p[0]) {
			q.Add("_pragma", p[1])
		}
	}
	for _, p := range given {
		q.Add("_pragma", p)
	}
	if q.Get("_txlock") == "" {
		q.Set("_txlock", "immediate")
	}
	if q.Get("_timefmt") == "" {
		// Times as text in the layout files written before this driver
		// hold (glebarez/go-sqlite's), so that they keep comparing in
		// order with the new ones.
		q.Set("_timefmt", sqliteTimeLayout)
	}
	return "file:" + path + "?" + q.Encode(), nil
}

// sqliteTimeLayout is how times are stored in SQLite.
const sqliteTimeLayout = "2006-01-02 15:04:05.999999999-07:00"

// redact is a connection string as an error may quote it: a URL's scheme,
// user, host and path, its password and its query (where a password,
// sslpassword or other secret may be, under any spelling) replaced; a
// key=value string not at all. It must hold for strings that do not
// parse, since those are the ones an error quotes: the user information
// is taken to run to the last "@" (a password may hold "/", "%" or
// spaces), and a URL whose "@" could be in its query is not shown.
func redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "(a connection string, not shown)"
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if strings.ContainsAny(rest[:at], "?#") {
			// The "@" may be in the query or fragment, or a password may
			// hold "?" or "#": no cut can be trusted to hide it.
			return scheme + "://(not shown)"
		}
		user, _, hasPassword := strings.Cut(rest[:at], ":")
		if hasPassword {
			user += ":xxxxx"
		}
		rest = user + "@" + rest[at+1:]
	}
	if before, _, hasQuery := strings.Cut(rest, "?"); hasQuery {
		rest = before + "?…"
	}
	return scheme + "://" + rest
}

// migrationLocks are what a migration takes first, per database, so that
// instances starting at once migrate one after another and the later ones
// find nothing to do: an advisory lock on PostgreSQL; on SQLite the
// migration's transaction begins IMMEDIATE, with the write lock
// (migrationTxOptions).
var migrationLocks = map[sqlq.Dialect]string{
	sqlq.Postgres: postgresSQL.SQL("migration_lock"),
}

// migrationTxOptions make a migration read what it judges the schema by
// only once it holds the lock, whatever the database's or the URL's
// defaults. PostgreSQL's is read committed: under repeatable read its
// snapshot would be taken by the lock statement, before it waits, and a
// start would then judge the schema up to date on what it saw before the
// migration it waited for committed. SQLite's begins IMMEDIATE (the
// driver's serializable) even when the URL sets _txlock=deferred, which
// would let a start read, and skip, while another process migrates.
var migrationTxOptions = map[sqlq.Dialect]*sql.TxOptions{
	sqlq.Postgres: {Isolation: sql.LevelReadCommitted},
	sqlq.SQLite:   {Isolation: sql.LevelSerializable},
}

// Migrate brings db's schema up to date: AutoMigrate for what the models
// declare, the currencies, then the numbered migrations not yet run
// (migrate.go), all in one transaction under one lock; or nothing, when
// the last complete migration was this build's and left the schema as it
// is (database/schema_state.go).
func Migrate(db *gorm.DB) error {
	_, err := MigrateReport(context.Background(), db)
	return err
}

// MigrateReport is Migrate, saying which tables it created and which
// numbered migrations it ran, or that the schema was up to date.
func MigrateReport(ctx context.Context, db *gorm.DB) (Migrated, error) {
	dialect, err := sqlq.Of(db)
	if err != nil {
		return Migrated{}, fmt.Errorf("migrate: %w", err)
	}
	var out Migrated
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if lock := migrationLocks[dialect]; lock != "" {
			if err := tx.Exec(lock).Error; err != nil {
				return err
			}
		}
		build, tables, err := buildFingerprint(tx, string(dialect), models.All())
		if err != nil {
			return err
		}
		fresh, version, err := upToDate(tx, build, string(dialect))
		if err != nil {
			return err
		}
		if fresh {
			out = Migrated{Tables: tables, Version: version, UpToDate: true}
			return nil
		}
		out, err = migrateAll(ctx, tx, string(dialect), tables)
		if err != nil {
			return err
		}
		return recordState(tx, build, string(dialect), out.Version)
	}, migrationTxOptions[dialect])
	if err != nil {
		return Migrated{}, fmt.Errorf("migrate: %w", err)
	}
	return out, nil
}

// migrateAll is the migration's whole work, in tx under its lock; tables
// are the models' (buildFingerprint parsed them).
func migrateAll(ctx context.Context, tx *gorm.DB, dialect string, tables []string) (Migrated, error) {
	missing := missingTables(tx, tables)
	if err := tx.AutoMigrate(models.All()...); err != nil {
		return Migrated{}, err
	}
	if err := writeCurrencies(tx); err != nil {
		return Migrated{}, err
	}
	out, err := runMigrations(ctx, tx, dialect)
	out.Tables, out.Created = tables, missing
	return out, err
}

// writeCurrencies copies the ISO 4217 list the Go code uses (package
// iso4217) into the database, which needs each currency's digits to turn a
// refund's decimal amount into the payment's minor units inside one
// statement.
func writeCurrencies(tx *gorm.DB) error {
	digits := iso4217.All()
	rows := make([]models.Currency, 0, len(digits))
	for code, d := range digits {
		rows = append(rows, models.Currency{Code: code, Digits: d})
	}
	slices.SortFunc(rows, func(a, b models.Currency) int { return strings.Compare(a.Code, b.Code) })
	err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "code"}}, DoUpdates: clause.AssignmentColumns([]string{"digits"})}).
		Create(&rows).Error
	if err != nil {
		return fmt.Errorf("write currencies: %w", err)
	}
	return nil
}

// Ping checks that the database answers.
func Ping(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Pinger returns Ping bound to db: what the HTTP surface's /healthz calls,
// so that it needs no GORM of its own.
func Pinger(db *gorm.DB) func(context.Context) error {
	return func(ctx context.Context) error { return Ping(ctx, db) }
}

// Close closes the pool.
func Close(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// newGormLogger reports slow queries and errors through slog, with
// parameters left out: they carry client data. In an outage every query
// fails, so each kind is sampled: the first of a minute in full, then a
// count of the others.
func newGormLogger(log *slog.Logger) logger.Interface {
	return logger.New(slogWriter{&logrepeat.Sampler{Logger: log}}, logger.Config{
		SlowThreshold:             500 * time.Millisecond,
		LogLevel:                  logger.Warn,
		IgnoreRecordNotFoundError: true,
		ParameterizedQueries:      true,
		Colorful:                  false,
	})
}

type slogWriter struct{ lines *logrepeat.Sampler }

func (w slogWriter) Printf(format string, args ...any) {
	detail := fmt.Sprintf(format, args...)
	class := "query failed"
	if strings.Contains(detail, "SLOW SQL") {
		class = "slow query"
	}
	w.lines.Log(slog.LevelWarn, class, "database", "detail", detail)
}
