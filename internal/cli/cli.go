// Package cli is the binary's command line: `cmpay` alone (or `cmpay
// serve`) serves the API, and `cmpay NAME …` runs a command instead and
// exits. server.go, the entry point, only calls Run.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/app"
)

// Env is what a command may use: the environment (DATABASE_URL and the
// rest, as the server reads them) and its output streams.
type Env struct {
	Getenv func(string) string
	// Stdin is read only by commands that ask for it (staff add
	// --password-stdin); nil reads as no input.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Migrated says the database is known to be migrated already, so
	// that tokens and staff open it without migrating it again. Tests
	// that run many commands against one database set it after the first:
	// on PostgreSQL each migration that finds nothing to do still reads
	// the catalog table by table, about a second under the race detector.
	// `cmpay migrate` migrates regardless.
	Migrated bool
}

// A command is a subcommand of the binary: `cmpay NAME ARGS…`. To add one,
// write its run function and give it a line in commands.
type command struct {
	args    string // what follows the name, for the usage
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

var commands = map[string]command{
	"serve":   {summary: "serve the API; the same as cmpay alone", run: serveCommand},
	"migrate": {summary: "create or update the database's schema, say what was done, and exit", run: migrateCommand},
	"tokens":  {args: "…", summary: "create, list and revoke API tokens", run: tokensCommand},
	"staff":   {args: "…", summary: "add, list and disable staff accounts of the admin UI", run: staffCommand},
}

// errUsage is a command line that does not say what to do; the usage has
// been printed.
var errUsage = errors.New("usage")

// errReported is a failure the command has reported itself (the server
// logs why it stopped).
var errReported = errors.New("reported")

// Run runs the command line args (without the program's name) and returns
// the process's exit status: 0, 1 when the command failed, 2 for a wrong
// command line. Without arguments it serves until ctx ends.
func Run(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(env.Stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "cmpay: unknown command %q\n\n", args[0])
		printUsage(env.Stderr)
		return 2
	}
	err := cmd.run(ctx, env, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	case errors.Is(err, errReported):
		return 1
	}
	fmt.Fprintf(env.Stderr, "cmpay %s: %v\n", args[0], err)
	return 1
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: cmpay                 serve the API (configured by the environment: docs/operations/configuration.md)")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := commands[name]
		fmt.Fprintf(w, "       cmpay %-15s %s\n", strings.TrimSpace(name+" "+c.args), c.summary)
	}
}

// noArgs refuses arguments to a command that takes none, with its usage.
func noArgs(env Env, name string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(env.Stdout, "Usage: cmpay %s (no arguments; cmpay help says what each command does)\n", name)
		return flag.ErrHelp
	}
	fmt.Fprintf(env.Stderr, "Usage: cmpay %s (no arguments; cmpay help says what each command does)\n", name)
	return errUsage
}

// serveCommand is `cmpay serve`, or `cmpay` alone.
func serveCommand(ctx context.Context, env Env, args []string) error {
	if err := noArgs(env, "serve", args); err != nil {
		return err
	}
	if err := app.Serve(ctx, env.Getenv, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("%w: %w", errReported, err)
	}
	return nil
}

// migrateCommand is `cmpay migrate`: what every start of the server does
// first, alone, for an operator who migrates before rolling out.
func migrateCommand(_ context.Context, env Env, args []string) error {
	if err := noArgs(env, "migrate", args); err != nil {
		return err
	}
	env.Migrated = false // migrating is this command's work
	db, m, err := openDatabase(env)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	w := env.Stdout
	fmt.Fprintf(w, "Migrated the %s database.\n", map[string]string{"postgres": "PostgreSQL", "sqlite": "SQLite"}[m.Dialect])
	switch {
	case m.UpToDate:
		fmt.Fprintf(w, "All %d tables were there, as this build leaves them: nothing to do.\n", len(m.Tables))
	case len(m.Created) == len(m.Tables):
		fmt.Fprintf(w, "Created all %d tables: %s.\n", len(m.Created), strings.Join(m.Created, ", "))
	case len(m.Created) > 0:
		fmt.Fprintf(w, "Created %d of its %d tables: %s; the others were there (missing columns and indexes, if any, added).\n",
			len(m.Created), len(m.Tables), strings.Join(m.Created, ", "))
	default:
		fmt.Fprintf(w, "All %d tables were there (missing columns and indexes, if any, added).\n", len(m.Tables))
	}
	switch len(m.Ran) {
	case 0:
		fmt.Fprintln(w, "No numbered migration to run.")
	case 1:
		fmt.Fprintf(w, "Ran numbered migration %d.\n", m.Ran[0])
	default:
		fmt.Fprintf(w, "Ran numbered migrations %s.\n", strings.Trim(fmt.Sprint(m.Ran), "[]"))
	}
	fmt.Fprintf(w, "Schema version %d.\n", m.Version)
	return nil
}

// openDatabase opens the database DATABASE_URL names, the server's, and
// migrates it as the server does at start (unless env.Migrated): a command
// may run before the server ever has. Its log goes to stderr, warnings
// only: stdout is the command's answer.
func openDatabase(env Env) (*gorm.DB, app.Migration, error) {
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := database.Open(env.Getenv("DATABASE_URL"), database.Options{MaxOpenConns: 2, Logger: log})
	if err != nil {
		return nil, app.Migration{}, err
	}
	if env.Migrated {
		return db, app.Migration{Dialect: db.Dialector.Name()}, nil
	}
	m, err := app.Migrate(db)
	if err != nil {
		_ = database.Close(db)
		return nil, m, err
	}
	return db, m, nil
}
