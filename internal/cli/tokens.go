package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/staff"
)

const tokensUsage = `Usage:
  cmpay tokens create --name NAME [--client CLIENT_ID] [--scopes SCOPES]
      prints the new token once, alone on the last line; SCOPES is a
      comma-separated list of %s
      (default %s); --client binds the token to that client's payments
  cmpay tokens list
  cmpay tokens revoke ID
`

// tokensCommand is `cmpay tokens create|list|revoke`.
func tokensCommand(ctx context.Context, env Env, args []string) error {
	usage := func() error {
		fmt.Fprintf(env.Stderr, tokensUsage, auth.JoinScopes(auth.AllScopes), auth.JoinScopes(auth.DefaultScopes))
		return errUsage
	}
	if len(args) == 0 {
		return usage()
	}
	// run gets the token store, and the staff store whose audit log
	// records each change a command makes, in the change's transaction.
	var run func(*apitoken.Store, *staff.Store) error
	switch args[0] {
	case "create":
		flags := flag.NewFlagSet("tokens create", flag.ContinueOnError)
		flags.SetOutput(env.Stderr)
		name := flags.String("name", "", "what the token is for (required)")
		client := flags.String("client", "", "the one client the token may act for (default: every client)")
		scopeList := flags.String("scopes", auth.JoinScopes(auth.DefaultScopes), "comma-separated scopes")
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		if *name == "" || flags.NArg() > 0 {
			return usage()
		}
		scopes, err := auth.ParseScopes(*scopeList)
		if err != nil {
			return err
		}
		run = func(s *apitoken.Store, st *staff.Store) error {
			return createToken(ctx, env.Stdout, s, st, *name, *client, scopes)
		}
	case "list":
		if len(args) != 1 {
			return usage()
		}
		run = func(s *apitoken.Store, _ *staff.Store) error { return listTokens(ctx, env.Stdout, s) }
	case "revoke":
		if len(args) != 2 {
			return usage()
		}
		run = func(s *apitoken.Store, st *staff.Store) error { return revokeToken(ctx, env.Stdout, s, st, args[1]) }
	default:
		return usage()
	}
	db, _, err := openDatabase(env)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	return run(apitoken.NewStore(db, apitoken.Options{}), staff.New(db, staff.Config{}))
}

func createToken(ctx context.Context, out io.Writer, s *apitoken.Store, st *staff.Store, name, client string, scopes []auth.Scope) error {
	tok, secret, err := s.Create(ctx, name, client, scopes, st.TokenAudit(staff.CommandLine, staff.ActTokenCreate))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Created %s %q with the scopes %s", tok.ID, tok.Name, auth.JoinScopes(tok.Scopes))
	if tok.ClientID != "" {
		fmt.Fprintf(out, ", for the client %s only", tok.ClientID)
	}
	fmt.Fprintln(out, ".")
	fmt.Fprintln(out, "The token is shown this once; only its SHA-256 is stored. Send it as Authorization: Bearer <token>:")
	fmt.Fprintln(out, secret)
	return nil
}

func listTokens(ctx context.Context, out io.Writer, s *apitoken.Store) error {
	tokens, err := s.List(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tCLIENT\tSCOPES\tCREATED\tLAST USED\tREVOKED")
	for _, t := range tokens {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, cmp.Or(t.ClientID, "(any)"), auth.JoinScopes(t.Scopes),
			stamp(&t.CreatedAt), cmp.Or(stamp(t.LastUsedAt), "never"), cmp.Or(stamp(t.RevokedAt), "-"))
	}
	return w.Flush()
}

func revokeToken(ctx context.Context, out io.Writer, s *apitoken.Store, st *staff.Store, id string) error {
	tok, err := s.Revoke(ctx, id, st.TokenAudit(staff.CommandLine, staff.ActTokenRevoke))
	if errors.Is(err, apitoken.ErrNotFound) {
		// Nothing changed: the refusal is recorded on its own, as the
		// admin UI records it.
		if recErr := st.Record(ctx, staff.CommandLine, staff.ActTokenRevoke, id, staff.OutcomeFailed, "no such token"); recErr != nil {
			return recErr
		}
		return err
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Revoked %s %q at %s; running servers refuse it within 10 seconds.\n", tok.ID, tok.Name, stamp(tok.RevokedAt))
	return nil
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
