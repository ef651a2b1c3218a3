// Command cmpay is the CMPay payment API server: payments created,
// captured, canceled and refunded over GraphQL and REST, each request
// under an idempotency key so that a client that retries never pays twice,
// through a processor (the built-in sandbox or Stripe), on PostgreSQL or
// an embedded SQLite file. Configuration comes from the environment; see
// docs/operations/configuration.md.
//
// This file only builds the command: the command line is internal/cli
// (`cmpay` serves, `cmpay help` lists the other commands), and the server
// is wired together in internal/app.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cmpay/cmpay/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Env{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
