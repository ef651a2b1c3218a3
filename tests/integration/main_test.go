// Package integration_test runs CMPay as users run it: the binary, built
// from the module, started as separate processes against real databases,
// signalled, killed, and cut off from PostgreSQL while requests flow.
// Tests of one package's code live beside that package; these are about
// the whole process.
package integration_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// binary is the server built once for every test here that runs it as a
// separate process.
var binary string

// TestMain builds the server once, from the module path (whatever the
// working directory), runs the tests, and fails the run if one left a
// goroutine running (dbtest.Main). CMPAY_SERVER_BIN names a server built
// already (./scripts/test.sh builds it once for every test that runs it).
func TestMain(m *testing.M) {
	if bin := os.Getenv("CMPAY_SERVER_BIN"); bin != "" {
		binary = bin
		os.Exit(dbtest.Main(m))
	}
	dir, err := os.MkdirTemp("", "cmpay-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "cmpay")
	build := exec.Command("go", "build", "-o", binary, "github.com/cmpay/cmpay")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build server:", err)
		os.Exit(1)
	}
	code := dbtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

const testToken = "process-test-token"

// process is a server running as its own OS process.
type process struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
	// debugURL is where DEBUG_ADDR serves, if it was set.
	debugURL string
}

// startServer starts the binary on a free loopback port and waits until it
// says where it listens. env adds to or overrides its environment.
func startServer(t *testing.T, databaseURL string, env ...string) *process {
	t.Helper()
	return launch(t, databaseURL, env...).ready(t)
}

// startOnEmpty starts a server on a new database of the dialect with
// nothing in it, whose tables the server's migration at start creates, as
// a first deployment's does, and returns it with that database: the
// test makes no copy of the migrated schema, which on PostgreSQL took up
// to a second under load.
func startOnEmpty(t *testing.T, dialect string, env ...string) (*process, dbtest.DB) {
	t.Helper()
	u := dbtest.Empty(t, dialect)
	p := startServer(t, u, env...)
	return p, dbtest.DB{Gorm: dbtest.Connect(t, u), Dialect: dialect, URL: u}
}

// launched is a server process started, not yet known to listen.
type launched struct {
	p         *process
	stderr    *bytes.Buffer
	urls      chan string
	debugURLs chan string
}

// launch starts the binary on a free loopback port, with env added to or
// overriding its environment, and returns without waiting for it.
func launch(t *testing.T, databaseURL string, env ...string) *launched {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+databaseURL,
		"ADDR=127.0.0.1:0",
		"API_TOKENS="+testToken,
		"ADMIN_PASSWORD=unused",
		"SHUTDOWN_TIMEOUT=10s",
	)
	cmd.Env = append(cmd.Env, env...) // later entries win
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{p: &process{cmd: cmd, exited: make(chan error, 1)}, stderr: &bytes.Buffer{},
		urls: make(chan string, 1), debugURLs: make(chan string, 1)}
	cmd.Stderr = l.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "CMPay listening on "); ok {
				l.urls <- rest
			}
			if rest, ok := strings.CutPrefix(sc.Text(), "Debug endpoints (pprof, expvar) on "); ok {
				l.debugURLs <- strings.TrimSuffix(rest, "/debug/pprof/")
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { l.p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-l.p.exited
		if t.Failed() {
			t.Logf("server log:\n%s", l.stderr.String())
		}
	})
	return l
}

// ready waits until the launched server says where it listens, and fails
// the test if it exits first or is silent for 30 s.
func (l *launched) ready(t *testing.T) *process {
	t.Helper()
	p := l.p
	select {
	case p.url = <-l.urls:
		select { // printed before the listening line, if at all
		case p.debugURL = <-l.debugURLs:
		default:
		}
		return p
	case err := <-p.exited:
		t.Fatalf("server exited before listening: %v\n%s", err, l.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start in 30s\n%s", l.stderr.String())
	}
	return nil
}

// runBinary runs the binary's command line (`cmpay ARGS…`) against
// databaseURL and returns its exit status and output.
func runBinary(t *testing.T, databaseURL string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("cmpay %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}

// lastLine is the last line of a command's output: where a command prints
// the secret it made.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// waitUntil polls cond until it holds, every interval, and fails the test
// if it still does not after within: what these tests do instead of
// sleeping for something to happen.
func waitUntil(t *testing.T, what string, within, interval time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		<-tick.C
	}
}
