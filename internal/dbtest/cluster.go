package dbtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Cluster is a PostgreSQL server of a test's own, which the test may stop,
// start, kill or promote: for fault tests that must not disturb other tests.
type Cluster struct {
	URL  string
	bin  string
	dir  string
	port int
	// settings are extra server settings (name=value, as for -c), passed on
	// the command line at every start.
	settings []string
	t        testing.TB
}

// StartCluster creates and starts a throwaway cluster, stopped and removed
// when the test ends. It uses CMPAY_PG_BIN or the newest PostgreSQL under
// /usr/lib/postgresql.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := newCluster(t)
	c.initdb()
	c.Start()
	return c
}

// pgBinDir is CMPAY_PG_BIN, or else the bin directory of the newest
// PostgreSQL under /usr/lib/postgresql; "" if there is none.
func pgBinDir() string {
	if bin := os.Getenv("CMPAY_PG_BIN"); bin != "" {
		return bin
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

// newCluster reserves a directory and a port; it creates no data.
func newCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	bin := pgBinDir()
	if bin == "" {
		t.Fatal("no PostgreSQL server programs: set CMPAY_PG_BIN or run ./scripts/test.sh, which installs them")
	}
	dir, err := os.MkdirTemp("", "cmpay-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir, port: freePort(t), settings: settings, t: t}
	if os.Geteuid() == 0 {
		// initdb and postgres refuse to run as root.
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = c.pgCtl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	return c
}

func (c *Cluster) initdb() {
	c.t.Helper()
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync").CombinedOutput(); err != nil {
		c.t.Fatalf("initdb: %v\n%s", err, out)
	}
}

// Port is the TCP port the server listens on, on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
	for _, s := range c.settings {
		// pg_ctl hands the options to a shell: quote each one.
		opts += " -c '" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	if err := c.pgCtl("start", "-w", "-t", "60", "-o", opts, "-l", filepath.Join(c.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		c.t.Fatalf("start PostgreSQL: %v\n%s", err, log)
	}
}

// Stop shuts the server down the way an operator's restart does: fast,
// rolling back open transactions and closing every connection.
func (c *Cluster) Stop() {
	c.t.Helper()
	if err := c.pgCtl("stop", "-w", "-m", "fast"); err != nil {
		c.t.Fatalf("stop PostgreSQL: %v", err)
	}
}

// BeginSmartShutdown asks the server to stop once its sessions have ended,
// and returns at once: meanwhile it refuses new connections (SQLSTATE
// 57P03, "the database system is shutting down").
func (c *Cluster) BeginSmartShutdown() {
	c.t.Helper()
	if err := c.pgCtl("stop", "-W", "-m", "smart"); err != nil {
		c.t.Fatalf("smart shutdown: %v", err)
	}
}

// Kill sends SIGKILL to the postmaster, as when its machine or process dies:
// nothing is shut down cleanly. Its backends notice the postmaster is gone
// and exit on their own; the port is closed at once.
func (c *Cluster) Kill() {
	c.t.Helper()
	pidFile, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		c.t.Fatalf("kill PostgreSQL: %v", err)
	}
	first, _, _ := strings.Cut(string(pidFile), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		c.t.Fatalf("kill PostgreSQL: postmaster.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill PostgreSQL (pid %d): %v", pid, err)
	}
}

// Promote turns a standby into a primary and waits until it accepts
// writes.
func (c *Cluster) Promote() {
	c.t.Helper()
	if err := c.pgCtl("promote", "-w", "-t", "60"); err != nil {
		c.t.Fatalf("promote PostgreSQL: %v", err)
	}
}

// Log returns the server's log so far, for a failing test to show.
func (c *Cluster) Log() string {
	log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	return string(log)
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) pgCtl(args ...string) error {
	out, err := c.command("pg_ctl", append([]string{"-D", c.data()}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

func (c *Cluster) command(program string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, program)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
