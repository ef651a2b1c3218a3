package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/staff"
)

const staffUsage = `usage:
  cmpay staff add USERNAME --role viewer|operator|admin [--password P]
  cmpay staff list
  cmpay staff disable USERNAME

Works on the database DATABASE_URL names, as the server does. Without
--password, add prints a temporary password, alone on the last line, which
must be changed at first sign-in; with it, that password is set and not asked
to be changed (it stays in your shell's history: prefer the temporary one).`

// staffCommand runs "cmpay staff …": staff accounts from the command line,
// for the first accounts and for when no admin can sign in. Changes are
// audited as made by "(command line)".
func staffCommand(ctx context.Context, env Env, args []string) error {
	stdout := env.Stdout
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, staffUsage)
		return nil
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("cmpay staff "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	role := fs.String("role", "", "viewer, operator or admin")
	password := fs.String("password", "", "the password to set; without it, a temporary one is printed")
	// The username may come before or after the flags.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w\n%s", err, staffUsage)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	want := map[string]int{"add": 1, "list": 0, "disable": 1}
	n, known := want[cmd]
	if !known {
		return fmt.Errorf("unknown command %q\n%s", cmd, staffUsage)
	}
	if len(positional) != n {
		return fmt.Errorf("%s takes %d argument(s), got %d\n%s", cmd, n, len(positional), staffUsage)
	}
	if cmd == "add" && *role == "" {
		return fmt.Errorf("add needs --role viewer, operator or admin\n%s", staffUsage)
	}
	if cmd != "add" && (*role != "" || *password != "") {
		return fmt.Errorf("--role and --password go with add only\n%s", staffUsage)
	}

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

	switch cmd {
	case "add":
		r, err := staff.ParseRole(*role)
		if err != nil {
			return err
		}
		username := staff.NormalizeUsername(positional[0])
		temporary, err := st.Add(ctx, staff.CommandLine, username, r, *password)
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
		username := staff.NormalizeUsername(positional[0])
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
