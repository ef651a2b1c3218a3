package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/startstop"
)

// Defaults of ReplicaOptions.
const (
	DefaultReplicaMaxLag        = 5 * time.Second
	DefaultReplicaCheckInterval = time.Second
)

// ReplicaOptions tune a Replica. The zero value is usable.
type ReplicaOptions struct {
	// MaxLag is how far behind the primary the replica may be and still
	// serve reads; zero means DefaultReplicaMaxLag.
	MaxLag time.Duration
	// CheckInterval is how often the replica's lag is measured; zero means
	// DefaultReplicaCheckInterval. A check gives up after it, or after a
	// second if that is longer: a replica that cannot answer a trivial
	// query that fast is not fit to serve.
	CheckInterval time.Duration
	// Pool tunes the replica's connection pool, as Open does the primary's.
	Pool Options
}

// Replica decides, for reads that may be a few seconds stale (the admin
// lists, the CSV export, the 24-hour overview, the payments listing), which
// database serves them: a streaming replica (DATABASE_REPLICA_URL) while it
// is fit, the primary otherwise. Anything that must see its own writes (a
// mutation's answer, the payment page after an admin action) reads the
// primary directly and never comes here.
//
// Fit means: it answered the last check, and it has replayed everything
// the primary had written at most MaxLag ago. A background loop checks that
// once per CheckInterval, never per query. Without a replica URL, or while
// the replica is down, lagging or not yet reachable, every read goes to the
// primary: a replica is an optimisation, never a dependency.
//
// How lag is measured, and why this way: each check first reads the
// primary's WAL position (pg_current_wal_flush_lsn: every acknowledged
// commit lies below it, and it is what the primary streams) and remembers
// when, then the
// replica's replay position (pg_last_wal_replay_lsn). A commit made before
// a sample was taken lies below that sample's position, so a replica that
// has replayed past it shows everything committed up to that moment; its
// lag is the age of the newest such sample. The better-known
// now() - pg_last_xact_replay_timestamp() grows on an idle primary, which
// commits nothing, and would push reads off a replica that is fully caught
// up; comparing pg_last_wal_receive_lsn with pg_last_wal_replay_lsn on the
// replica alone misses a replica whose WAL stream has stopped (both stay
// equal while the primary moves on). Asking the primary has neither flaw,
// and costs one trivial query on it per second.
type Replica struct {
	primary *gorm.DB
	// primaryPG runs the checks' statement on the primary.
	primaryPG *sqlq.PG
	url       string
	opts      ReplicaOptions
	log       *slog.Logger

	// replica is the replica's pool, once it could be opened.
	replica atomic.Pointer[gorm.DB]
	fit     atomic.Bool

	// samples and reason belong to the checking goroutine.
	samples []lsnSample
	reason  string // why the replica is unfit, "" when fit; for the log

	// checks runs loop from OpenReplica to Close.
	checks startstop.Base
}

// lsnSample is the primary's WAL position at a moment.
type lsnSample struct {
	at  time.Time
	lsn int64
}

// OpenReplica returns a Replica for reads beside primary. With an empty
// url it has no replica and always reads the primary, so callers can use
// one code path whether or not a replica is configured. Otherwise url must
// be a PostgreSQL URL, and so must the primary be. The replica being
// unreachable is not an error: reads go to the primary until it answers.
// The first check runs before OpenReplica returns, so that a fit replica
// serves from the first read. Close stops the checks.
func OpenReplica(primary *gorm.DB, url string, opts ReplicaOptions) (*Replica, error) {
	r := &Replica{primary: primary, url: url, opts: opts, log: opts.Pool.Logger}
	if url == "" {
		return r, nil
	}
	pg, err := sqlq.Pick(primary, func(pg *sqlq.PG) *sqlq.PG { return pg }, func(*sqlq.Lite) *sqlq.PG { return nil })
	if err != nil || pg == nil {
		return nil, errors.New("DATABASE_REPLICA_URL needs PostgreSQL as DATABASE_URL: a streaming replica is PostgreSQL's")
	}
	r.primaryPG = pg
	// Checked here, not left to the first connection attempt: a URL that
	// cannot work is a configuration error, not a replica that is down.
	if scheme, _, _ := strings.Cut(url, ":"); !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		return nil, fmt.Errorf("DATABASE_REPLICA_URL %q: want postgres://…", redact(url))
	}
	if _, err := pgx.ParseConfig(url); err != nil {
		return nil, fmt.Errorf("DATABASE_REPLICA_URL %q: %w", redact(url), err)
	}
	if r.opts.MaxLag <= 0 {
		r.opts.MaxLag = DefaultReplicaMaxLag
	}
	if r.opts.CheckInterval <= 0 {
		r.opts.CheckInterval = DefaultReplicaCheckInterval
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	err = r.checks.StartFunc(context.Background(), func(context.Context) error {
		r.check()
		return nil
	}, r.loop)
	return r, err
}

// Reader returns the database for a read that may be up to MaxLag stale:
// the replica while it is fit, the primary otherwise. Take it per read (or
// per request), not once: it changes as the replica's state does.
func (r *Replica) Reader() *gorm.DB {
	if r.fit.Load() {
		if db := r.replica.Load(); db != nil {
			return db
		}
	}
	return r.primary
}

// Read runs fn, which must only read, on Reader(). If the replica fails it
// because it has just gone away (an error for which IsUnavailable holds) or
// a replayed change cancelled the query (a recovery conflict), the replica
// is set aside until the next check vouches for it, and fn runs again on
// the primary: a replica's failure never reaches a client. Errors from the
// primary are returned as they are.
func (r *Replica) Read(fn func(db *gorm.DB) error) error {
	db := r.Reader()
	err := fn(db)
	if err == nil || db == r.primary || !(IsUnavailable(err) || isRecoveryConflict(err)) {
		return err
	}
	if r.fit.CompareAndSwap(true, false) {
		r.log.Warn("replica failed a read; reading from the primary until it passes a check", "err", err)
	}
	return fn(r.primary)
}

// isRecoveryConflict: a standby cancelled the query because replaying the
// primary's changes needed what it held (SQLSTATE 40001 with this message,
// or 40P01 for a deadlock with the startup process).
func isRecoveryConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01") &&
		strings.Contains(pgErr.Message, "conflict with recovery")
}

// Close stops the checks and closes the replica's pool (not the primary's).
// Call it after the last read.
func (r *Replica) Close() error {
	r.checks.Stop()
	r.fit.Store(false)
	if db := r.replica.Load(); db != nil {
		return Close(db)
	}
	return nil
}

func (r *Replica) loop(ctx context.Context) {
	t := time.NewTicker(r.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.check()
		}
	}
}

// check measures the replica once and records whether it is fit, logging
// when that changes.
func (r *Replica) check() {
	ctx, cancel := context.WithTimeout(context.Background(), max(r.opts.CheckInterval, time.Second))
	defer cancel()
	lag, err := r.measure(ctx)
	reason := ""
	switch {
	case err != nil:
		reason = err.Error()
	case lag > r.opts.MaxLag:
		reason = fmt.Sprintf("more than %s behind the primary", r.opts.MaxLag)
	}
	fit := reason == ""
	was := r.fit.Swap(fit)
	switch {
	case fit && !was:
		r.log.Info("replica serves reads", "lag", lag.String())
	case !fit && (was || reason != r.reason):
		r.log.Warn("replica unfit; reads go to the primary", "reason", reason)
	}
	r.reason = reason
}

// measure samples the primary's WAL position, then returns how far behind
// it the replica is (see Replica).
func (r *Replica) measure(ctx context.Context) (time.Duration, error) {
	now := time.Now()
	var lsn int64
	if err := r.primaryPG.QueryRow(ctx, postgresSQL.SQL("primary_wal_position")).Scan(&lsn); err == nil {
		r.samples = append(r.samples, lsnSample{at: now, lsn: lsn})
	} else {
		// Without the primary there is no fresh sample: the replica's lag
		// is then measured against the last one, and grows with its age.
		r.log.Debug("replica check: primary position", "err", err)
	}
	// Keep what can still decide: samples younger than MaxLag, and the
	// newest older one.
	for len(r.samples) > 1 && now.Sub(r.samples[1].at) > r.opts.MaxLag {
		r.samples = r.samples[1:]
	}

	db := r.replica.Load()
	if db == nil {
		opened, err := Open(r.url, r.opts.Pool)
		if err != nil {
			return 0, fmt.Errorf("replica not reachable: %w", err)
		}
		r.replica.Store(opened)
		db = opened
	}
	// On a replica that has been promoted (a failover onto it), nothing is
	// replayed any more and its own write position is what it has.
	sqlDB, err := db.DB()
	if err != nil {
		return 0, fmt.Errorf("replica: %w", err)
	}
	var replayed sql.NullInt64
	if err := sqlq.NewPG(sqlDB).QueryRow(ctx, postgresSQL.SQL("replica_wal_position")).Scan(&replayed); err != nil {
		return 0, fmt.Errorf("replica not answering: %w", err)
	}
	if !replayed.Valid {
		return 0, errors.New("replica has replayed nothing yet")
	}
	for i := len(r.samples) - 1; i >= 0; i-- {
		if r.samples[i].lsn <= replayed.Int64 {
			return time.Since(r.samples[i].at), nil
		}
	}
	return 0, errors.New("replica behind every recent position of the primary")
}
