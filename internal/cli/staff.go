package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/staff"
)

const staffUsage = `Usage:
  cmpay staff add USERNAME --role viewer|operator|admin [--password P | --password-stdin]
  cmpay staff list
  cmpay staff disable USERNAME

Works on the database DATABASE_URL names, as the server does. Without a
password, add prints a temporary password, alone on the last line, which
must be changed at first sign-in. With --password-stdin, the first line of
standard input is set as the password and not asked to be changed:
  echo "$PASSPHRASE" | cmpay staff add bob --role admin --password-stdin
--password P does the same, but P shows in the process list (ps) while the
command runs and stays in your shell's history: prefer --password-stdin or
the temporary password.`

// staffArgs is a parsed "cmpay staff …" command line.
type staffArgs struct {
	cmd, username, role, password string
	passwordStdin                 bool
}

// staffCommand runs "cmpay staff …": staff accounts from the command line,
// for the first accounts and for when no admin can sign in. Changes are
// audited as made by "(command line)".
func staffCommand(ctx context.Context, env Env, args []string) error {
	// As every command's: help asked for goes to stdout, no command at
	// all is a wrong command line; both exit 2, as tokens' and migrate's.
	if len(args) == 0 {
		fmt.Fprintln(env.Stderr, staffUsage)
		return errUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(env.Stdout, staffUsage)
		return flag.ErrHelp
	}
	a, err := parseStaffArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(env.Stdout, staffUsage)
		return err
	}
	if err != nil {
		// A wrong command line, like tokens': exit status 2, the reason and
		// the usage on stderr.
		fmt.Fprintf(env.Stderr, "cmpay staff: %v\n\n%s\n", err, staffUsage)
		return errUsage
	}
	if a.passwordStdin {
		if a.password, err = readPassword(env.Stdin); err != nil {
			return err
		}
	}
	return runStaff(ctx, env, a)
}

// parseStaffArgs reads a staff command line; its errors are usage errors
// (flag.ErrHelp for -h).
func parseStaffArgs(args []string) (staffArgs, error) {
	a := staffArgs{cmd: args[0]}
	fs := flag.NewFlagSet("cmpay staff "+a.cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.role, "role", "", "viewer, operator or admin")
	fs.StringVar(&a.password, "password", "", "the password to set; without it, a temporary one is printed")
	fs.BoolVar(&a.passwordStdin, "password-stdin", false, "read the password to set from the first line of standard input")
	// The username may come before or after the flags.
	var positional []string
	rest := args[1:]
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return a, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	want := map[string]int{"add": 1, "list": 0, "disable": 1}
	n, known := want[a.cmd]
	switch {
	case !known:
		return a, fmt.Errorf("unknown command %q", a.cmd)
	case len(positional) != n:
		return a, fmt.Errorf("%s takes %d argument(s), got %d", a.cmd, n, len(positional))
	case a.cmd == "add" && a.role == "":
		return a, errors.New("add needs --role viewer, operator or admin")
	case a.cmd != "add" && (a.role != "" || a.password != "" || a.passwordStdin):
		return a, errors.New("--role and the password flags go with add only")
	case a.password != "" && a.passwordStdin:
		return a, errors.New("--password and --password-stdin: give one of them")
	}
	if n == 1 {
		a.username = positional[0]
	}
	return a, nil
}

// readPassword reads the first line of r, without its line ending, for
// --password-stdin. An empty one is refused here rather than set.
func readPassword(r io.Reader) (string, error) {
	if r == nil {
		return "", errors.New("--password-stdin: no standard input")
	}
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--password-stdin: reading standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("--password-stdin: standard input gave no password (an empty first line)")
	}
	return line, nil
}

// runStaff does what a parsed staff command line asks.
func runStaff(ctx context.Context, env Env, a staffArgs) error {
	stdout := env.Stdout
	cfg, err := config.FromEnv(env.Getenv)
	if err != nil {
		return err
	}
	db, _, err := openDatabase(env)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	st := staff.New(db, staff.Config{IdleTimeout: cfg.AdminSessionIdle})

	switch a.cmd {
	case "add":
		r, err := staff.ParseRole(a.role)
		if err != nil {
			return err
		}
		username := staff.NormalizeUsername(a.username)
		temporary, err := st.Add(ctx, staff.CommandLine, username, r, a.password)
		if err != nil {
			return err
		}
		if temporary == "" {
			fmt.Fprintf(stdout, "Added %s (%s) with the password given.\n", username, r)
			return nil
		}
		fmt.Fprintf(stdout, "Added %s (%s). Temporary password, shown once, to be changed at first sign-in:\n%s\n", username, r, temporary)
	case "list":
		accounts, err := st.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "USERNAME\tROLE\tSTATE\tCREATED (UTC)\tLAST SIGN-IN (UTC)")
		for _, a := range accounts {
			state := "active"
			switch {
			case a.Disabled:
				state = "disabled"
			case a.MustChangePassword:
				state = "temporary password"
			}
			last := "never"
			if !a.LastSignInAt.IsZero() {
				last = a.LastSignInAt.Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Username, a.Role, state, a.CreatedAt.Format("2006-01-02 15:04"), last)
		}
		return tw.Flush()
	case "disable":
		username := staff.NormalizeUsername(a.username)
		if err := st.Disable(ctx, staff.CommandLine, username); err != nil {
			if errors.Is(err, staff.ErrNotFound) {
				return fmt.Errorf("there is no staff account %q", username)
			}
			return err
		}
		fmt.Fprintf(stdout, "Disabled %s; its sessions have ended.\n", username)
	}
	return nil
}
