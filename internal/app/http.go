package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/staff"
)

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

// debugServer serves Go's profiler and expvar on addr (DEBUG_ADDR), apart
// from the API: they have no credentials of their own, so addr should be a
// loopback or private address, and a warning says so when it is not. Its
// Start listens and says where on stdout; Stop closes it.
func debugServer(addr string, stdout io.Writer, log *slog.Logger) startstop.Service {
	var (
		srv *http.Server
		ln  net.Listener
	)
	return startstop.InitFunc(func(context.Context) error {
		srv = newHTTPServer(httpapi.DebugHandler(), log)
		srv.WriteTimeout = 2 * time.Minute // a CPU profile takes 30 s by default
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("DEBUG_ADDR: %w", err)
		}
		if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
			log.Warn("DEBUG_ADDR is not a loopback address: the profiler has no credentials, keep it off the internet",
				"debug_addr", ln.Addr().String())
		}
		fmt.Fprintf(stdout, "Debug endpoints (pprof, expvar) on http://%s/debug/pprof/\n", ln.Addr())
		return nil
	}, func(ctx context.Context) {
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln)
		}()
		<-ctx.Done()
		_ = srv.Close()
		<-served
	})
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
