// Command cmpay is the CMPay payment API server: an idempotent
// createPayment over GraphQL (and REST), on PostgreSQL or an embedded
// SQLite file. Configuration comes from the environment; see
// docs/operations/configuration.md.
// With arguments it runs a command instead (cli.go): `cmpay tokens …`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

func main() {
	if len(os.Args) > 1 {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		code := runCommand(ctx, os.Args[1:], cmdEnv{getenv: os.Getenv, stdout: os.Stdout, stderr: os.Stderr})
		stop()
		os.Exit(code)
	}
	out := newBufferedLog(os.Stderr)
	log := slog.New(slog.NewJSONHandler(out, nil))
	slog.SetDefault(log)
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Getenv, os.Stdout, log)
	stop()
	if err != nil {
		log.Error("cmpay stopped", "err", err)
	}
	out.Close()
	if err != nil {
		os.Exit(1)
	}
}

// tuneGC trades a little memory for less collector work: GOGC=400 unless
// GOGC is set, and a 64 MiB soft limit on Go's memory unless GOMEMLIMIT
// is. The live heap is small (1-2 MB under load), so the collector's goal
// is its floor, 4 MB times GOGC/100: at GOGC=200 an 8 MB goal meant about
// four collections per 1,000 requests, and GOGC=400's 16 MB floor cut the
// CPU per request by 3-5% (docs/benchmarks/2026-12-03-collector-floor.md),
// with the process near 50 MB. The limit makes the collector work harder
// as Go's heap nears 64 MiB, should the live heap ever grow that far.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
}

// run serves until ctx ends, then shuts down gracefully: it stops accepting
// connections and lets in-flight requests finish, for at most
// SHUTDOWN_TIMEOUT; then it closes the connections left and returns.
func run(ctx context.Context, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	db, err := database.Open(cfg.DatabaseURL, database.Options{Logger: log})
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	if err := migrateAll(db); err != nil {
		return err
	}

	// Reads that may be a few seconds stale can go to a streaming replica
	// (DATABASE_REPLICA_URL); replica.Reader() is the primary when none is
	// configured or the replica is down or lagging. The payments listing
	// (GraphQL and the admin lists), the CSV export and the 24-hour
	// overview read through it; everything that must see its own writes
	// reads the primary.
	replica, err := database.OpenReplica(db, cfg.ReplicaURL, database.ReplicaOptions{Pool: database.Options{Logger: log}})
	if err != nil {
		return err
	}
	defer func() { _ = replica.Close() }()

	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	m := metrics.New(sqlDB)
	ev, wh, err := newEvents(db, cfg, m, log)
	if err != nil {
		return err
	}
	svc, err := payments.NewService(db, payments.Config{
		KeyTTL: cfg.KeyTTL, Reads: replica, Unavailable: database.IsUnavailable, ClockOffset: database.ClockOffset(db),
		OnAttempt: func(op payments.Operation, o payments.Outcome, transport string) {
			m.OnAttempt(op, o, transport)
			if o == payments.OutcomeCreated || o == payments.OutcomeApplied {
				ev.Wake() // an event was written
			}
		},
	})
	if err != nil {
		return err
	}
	// Background work on the payments (clock, sweep) until shutdown.
	background, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	svc.StartClockSync(background, log)
	staffStore := staff.New(db, staff.Config{IdleTimeout: cfg.AdminSessionIdle})
	admin, err := staffStore.Bootstrap(ctx, cfg.AdminUser, cfg.AdminPassword)
	if err != nil {
		return err
	}
	srv := newHTTPServer(httpapi.NewHandler(httpapi.Deps{
		Service:        svc,
		Ping:           database.Pinger(db),
		Metrics:        m,
		APITokens:      cfg.APITokens,
		Tokens:         apitoken.NewStore(db, apitoken.Options{}),
		Staff:          staffStore,
		CORSOrigins:    cfg.CORSOrigins,
		TrustedProxies: cfg.TrustedProxies,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		GraphQL: &graph.Options{
			Introspection: cfg.Introspection,
			MaxDepth:      cfg.MaxDepth,
			MaxComplexity: cfg.MaxComplexity,
		},
		Events:   ev,
		Webhooks: wh,
		Logger:   log,
	}), log)

	if cfg.DebugAddr != "" {
		stopDebug, err := serveDebug(cfg.DebugAddr, stdout, log)
		if err != nil {
			return err
		}
		defer stopDebug()
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	// Start-up (migrations, the schema, SQLite's WebAssembly module) leaves
	// tens of MB of garbage, and the collector's first goal after it a
	// multiple of what was live then (GOGC): under the first traffic the
	// heap grew to 45 MB before a collection (at GOGC=200), and the process
	// to its peak RSS.
	// Collecting once here starts the first cycle from the steady live heap.
	debug.FreeOSMemory()
	printStartup(stdout, cfg, admin, ln.Addr())
	log.Info("listening", "addr", ln.Addr().String(), "database", db.Dialector.Name(), "key_ttl", cfg.KeyTTL.String())

	go svc.RunSweeper(background, cfg.SweepInterval, log)
	stopEvents := runEvents(srv, ev, wh)
	defer stopEvents()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}

	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Requests still running (or a client that never finishes its
		// body) must not keep the process alive past the timeout its
		// supervisor was promised: cut their connections and go. A create
		// cut here commits or rolls back as a unit; its retry finds out
		// which.
		log.Warn("shutdown timeout reached; closing the remaining connections", "err", err)
		if err := srv.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// serveDebug serves Go's profiler and expvar on addr (DEBUG_ADDR), apart
// from the API: they have no credentials of their own, so addr should be a
// loopback or private address, and a warning says so when it is not. The
// returned function closes it.
func serveDebug(addr string, stdout io.Writer, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("DEBUG_ADDR: %w", err)
	}
	srv := newHTTPServer(httpapi.DebugHandler(), log)
	srv.WriteTimeout = 2 * time.Minute // a CPU profile takes 30 s by default
	go func() { _ = srv.Serve(ln) }()
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		log.Warn("DEBUG_ADDR is not a loopback address: the profiler has no credentials, keep it off the internet",
			"debug_addr", ln.Addr().String())
	}
	fmt.Fprintf(stdout, "Debug endpoints (pprof, expvar) on http://%s/debug/pprof/\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}

// newHTTPServer sets every timeout, so that slow or idle clients cannot
// hold connections open for ever: a client that sends its headers slowly
// (slowloris) is cut off after 5 s, one that sends or reads its body slowly
// after 30 s.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// printStartup tells the operator where the server is and, once, any
// secret it made up because none was configured. Secrets go to stdout,
// never to the structured log.
func printStartup(w io.Writer, cfg config.Config, admin staff.Bootstrapped, addr net.Addr) {
	fmt.Fprintf(w, "CMPay listening on http://%s\n", addr)
	if cfg.APITokenGenerated {
		fmt.Fprintf(w, "API token (generated; set API_TOKENS to choose): %s\n", cfg.APITokens[0])
	}
	if admin.Generated != "" {
		fmt.Fprintf(w, "Admin password for %q (generated; set ADMIN_PASSWORD to choose; change it at first sign-in on /admin): %s\n",
			staff.NormalizeUsername(cfg.AdminUser), admin.Generated)
	}
}
