// Package app is the server's composition root: it reads the
// configuration, opens and migrates the database, builds every service and
// the HTTP server, starts the background services in order, serves, and
// at shutdown stops them in reverse. Nothing else wires packages together;
// the command line (internal/cli) calls Serve.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/processor/stripe"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// Serve runs the server as the binary does: JSON logs to stderr, buffered
// (bufferedLog), the collector tuned (tuneGC), then Run. It returns Run's
// error, which it has also logged.
func Serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	out := newBufferedLog(stderr)
	if err := out.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	defer out.Stop()
	log := slog.New(slog.NewJSONHandler(out, nil))
	slog.SetDefault(log)
	tuneGC()
	err := Run(ctx, getenv, stdout, log)
	if err != nil {
		log.Error("cmpay stopped", "err", err)
	}
	return err
}

// Run serves until ctx ends, then shuts down gracefully: it stops accepting
// connections and lets in-flight requests finish, for at most
// SHUTDOWN_TIMEOUT; then it closes the connections left, stops the
// background services and returns.
func Run(ctx context.Context, getenv func(string) string, stdout io.Writer, log *slog.Logger) error {
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	// The processor: the sandbox unless PROCESSOR says otherwise, so that
	// a server started with nothing set needs nothing else.
	pcfg, err := processor.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	db, err := database.Open(cfg.DatabaseURL, database.Options{Logger: log})
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	m, err := Migrate(db)
	if err != nil {
		return err
	}
	// An operator reading a start's log sees which schema it runs on, and
	// whether this start changed it or found it as this build leaves it.
	log.Info("schema", "version", m.Version, "up_to_date", m.UpToDate, "tables_created", len(m.Created), "migrations_ran", m.Ran)
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

	s, err := build(ctx, db, replica, cfg, pcfg, stdout, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return s.serve(ctx, ln, stdout)
}

// server is what Run has built.
type server struct {
	cfg   config.Config
	db    *gorm.DB
	log   *slog.Logger
	http  *http.Server
	admin staff.Bootstrapped
	// background lists the background services in the order they start;
	// events and webhooks are among them, and also stopped as soon as
	// the HTTP server shuts down.
	background *startstop.Group
	events     *events.Service
	webhooks   *webhooks.Service
}

// build makes every service and the HTTP server; nothing runs yet.
func build(ctx context.Context, db *gorm.DB, replica *database.Replica, cfg config.Config, pcfg processor.Config,
	stdout io.Writer, log *slog.Logger) (*server, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	m := metrics.New(sqlDB)
	ev, wh, err := newEvents(db, cfg, m, log)
	if err != nil {
		return nil, err
	}
	proc, err := newProcessor(pcfg)
	if err != nil {
		return nil, err
	}
	svc, err := newPayments(db, replica, cfg, pcfg, proc, m, ev, log)
	if err != nil {
		return nil, err
	}
	m.WatchUnknown(svc.OpenUnknown)
	// The events Stripe posts, when a webhook secret is set (without one
	// their route answers 404).
	var in *intake.Service
	if secret := pcfg.StripeWebhookSecret.Reveal(); secret != "" {
		if in, err = newIntake(db, secret, svc); err != nil {
			return nil, err
		}
	}
	// Stored processor events are swept whether or not a secret is set now.
	oldEvents, err := intake.NewSweeper(db, nil)
	if err != nil {
		return nil, err
	}
	staffStore := staff.New(db, staff.Config{IdleTimeout: cfg.AdminSessionIdle, Logger: log})
	admin, err := staffStore.Bootstrap(ctx, cfg.AdminUser, cfg.AdminPassword)
	if err != nil {
		return nil, err
	}
	tokens := apitoken.NewStore(db, apitoken.Options{Logger: log})
	handler := httpapi.NewHandler(httpapi.Deps{
		Service:         svc,
		Ping:            database.Pinger(db),
		Metrics:         m,
		APITokens:       cfg.APITokens,
		Tokens:          tokens,
		Staff:           staffStore,
		CORSOrigins:     cfg.CORSOrigins,
		TrustedProxies:  cfg.TrustedProxies,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		GraphQL:         graphQLOptions(cfg),
		Events:          ev,
		Webhooks:        wh,
		ProcessorEvents: in,
		Sandbox:         pcfg.Processor == processor.NameSandbox,
		Logger:          log,

		AdminRequestTimeout: cfg.AdminRequestTimeout,
	})
	// The clock is measured before anything serves; the sweepers and the
	// debug endpoints depend on nothing started after them. Every instance
	// resolves unknown processor outcomes and reads old authorizations
	// (the Recoverer; the database's leases keep two instances off one),
	// and reads the pending Pix and boleto whose news is late (the Poller).
	sweepEvery := cmp.Or(cfg.SweepInterval, payments.DefaultSweepInterval)
	// Tokens' and staff sessions' last uses are written in the background
	// until every request has ended: first started, that service is the
	// last stopped.
	closeLastUses := startstop.Func(func(ctx context.Context) { <-ctx.Done(); tokens.Close(); staffStore.Close() })
	background := []startstop.Service{closeLastUses, svc.ClockSync(log), ev, wh, svc.Sweeper(sweepEvery, log),
		oldEvents.Runner(sweepEvery, log), svc.Recoverer(0, log),
		svc.Poller(pcfg.PollAfter, 0, log)}
	if in != nil {
		background = append(background, in.Retrier(5*time.Second, log))
	}
	if cfg.DebugAddr != "" {
		background = append(background, debugServer(cfg.DebugAddr, stdout, log))
	}
	return &server{cfg: cfg, db: db, log: log, http: newHTTPServer(handler, log), admin: admin,
		background: startstop.NewGroup(background...), events: ev, webhooks: wh}, nil
}

// newPayments is the payments service over db, its processor proc, with
// its hooks into the metrics m and the events ev (a settled operation
// or an applied request wrote an event, which wakes ev's dispatch), and
// its processor calls' lines to log.
func newPayments(db *gorm.DB, replica *database.Replica, cfg config.Config, pcfg processor.Config, proc processor.Processor,
	m *metrics.Metrics, ev *events.Service, log *slog.Logger) (*payments.Service, error) {
	return payments.NewService(db, payments.Config{
		KeyTTL: cfg.KeyTTL, Reads: replica, Unavailable: database.IsUnavailable, ClockOffset: database.ClockOffset(db),
		Processor: proc, Sandbox: sandbox.New(pcfg), ProcessorTimeout: pcfg.Timeout, RecoveryAfter: pcfg.RecoveryAfter,
		SearchLag:       pcfg.StripeSearchLag,
		OnProcessorCall: m.OnProcessorCall, OnLeaseLate: m.OnLeaseLate, OnDuplicate: m.OnDuplicate,
		OnOperationSettled: func(op payments.Operation, wasUnknown bool) {
			m.OnOperationSettled(op, wasUnknown)
			ev.Wake() // an event was written
		},
		OnAttempt: func(op payments.Operation, o payments.Outcome, transport string) {
			m.OnAttempt(op, o, transport)
			if o == payments.OutcomeCreated || o == payments.OutcomeApplied {
				ev.Wake() // an event was written
			}
		},
		Logger: log,
	})
}

// serve starts the background services, serves on ln until ctx ends, and
// shuts down.
func (s *server) serve(ctx context.Context, ln net.Listener, stdout io.Writer) error {
	// The services run until Stop, not until ctx ends: they stop after
	// the HTTP server, in reverse order.
	if err := s.background.Start(context.WithoutCancel(ctx)); err != nil {
		_ = ln.Close()
		return err
	}
	defer s.background.Stop()
	// Subscriptions end as soon as the server starts shutting down (so
	// that Server-Sent Events streams, which Shutdown waits for, close),
	// and the dispatcher claims nothing new; each Stop waits for its
	// service, and a webhook attempt in flight for its answer.
	s.http.RegisterOnShutdown(func() { startstop.StopAll(s.events, s.webhooks) })

	// Start-up (migrations, the schema, SQLite's WebAssembly module) leaves
	// tens of MB of garbage, and the collector's first goal after it a
	// multiple of what was live then (GOGC): under the first traffic the
	// heap grew to 45 MB before a collection (at GOGC=200), and the process
	// to its peak RSS.
	// Collecting once here starts the first cycle from the steady live heap.
	debug.FreeOSMemory()
	printStartup(stdout, s.cfg, s.admin, ln.Addr())
	s.log.Info("listening", "addr", ln.Addr().String(), "database", s.db.Dialector.Name(), "key_ttl", cmp.Or(s.cfg.KeyTTL, payments.DefaultKeyTTL).String())

	served := make(chan error, 1)
	go func() { served <- s.http.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	return s.shutdown(served)
}

// shutdown stops the HTTP server gracefully, for at most SHUTDOWN_TIMEOUT,
// then cuts the connections left.
func (s *server) shutdown(served <-chan error) error {
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		// Requests still running (or a client that never finishes its
		// body) must not keep the process alive past the timeout its
		// supervisor was promised: cut their connections and go. A create
		// cut here commits or rolls back as a unit; its retry finds out
		// which.
		s.log.Warn("shutdown timeout reached; closing the remaining connections", "err", err)
		if err := s.http.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s.log.Info("stopped")
	return nil
}

// newIntake takes in the events Stripe posts, verified with secret, and
// applies them through svc.
func newIntake(db *gorm.DB, secret string, svc *payments.Service) (*intake.Service, error) {
	return intake.New(db, intake.Options{Processor: processor.NameStripe, Decode: stripe.DecodeEvent, Apply: eventApplier{svc},
		Verify: func(payload []byte, signature string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(payload, signature, secret, now)
		}})
}

// newProcessor is the processor pcfg names: the sandbox, or Stripe.
func newProcessor(pcfg processor.Config) (processor.Processor, error) {
	if pcfg.Processor == processor.NameStripe {
		return stripe.New(pcfg)
	}
	return sandbox.New(pcfg), nil
}

// eventApplier applies the processor's events through payments, telling
// intake which failures only mean "not yet" (a payment still PROCESSING).
type eventApplier struct{ svc *payments.Service }

func (a eventApplier) ApplyProcessorEvent(ctx context.Context, ev processor.Event) error {
	err := a.svc.ApplyProcessorEvent(ctx, ev)
	if errors.Is(err, payments.ErrPaymentNotKnown) {
		return fmt.Errorf("%w: %w", intake.ErrNotYet, err)
	}
	return err
}

// graphQLOptions are graph.DefaultOptions with what cfg sets instead.
func graphQLOptions(cfg config.Config) *graph.Options {
	o := graph.DefaultOptions()
	if cfg.Introspection != nil {
		o.Introspection = *cfg.Introspection
	}
	o.MaxDepth = cmp.Or(cfg.MaxDepth, o.MaxDepth)
	o.MaxComplexity = cmp.Or(cfg.MaxComplexity, o.MaxComplexity)
	o.Subscriptions = graph.SubscriptionLimits{PerSocket: cfg.SubscriptionsPerSocket,
		PerToken: cfg.SubscriptionsPerToken, PerInstance: cfg.SubscriptionsPerInstance}
	return &o
}
