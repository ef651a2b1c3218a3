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
	"testing"
)

// Cluster is a PostgreSQL server of a test's own, which the test may stop
// and start: for fault tests that must not disturb other tests.
type Cluster struct {
	URL  string
	bin  string
	dir  string
	port int
	t    testing.TB
}

// StartCluster creates and starts a throwaway cluster, stopped and removed
// when the test ends. It uses CMPAY_PG_BIN or the newest PostgreSQL under
// /usr/lib/postgresql.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := os.Getenv("CMPAY_PG_BIN")
	if bin == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Strings(found)
		if len(found) == 0 {
			t.Fatal("no PostgreSQL server programs: set CMPAY_PG_BIN or run ./scripts/test.sh, which installs them")
		}
		bin = found[len(found)-1]
	}
	dir, err := os.MkdirTemp("", "cmpay-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{bin: bin, dir: dir, port: freePort(t), t: t}
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
	if out, err := c.command("initdb", "-D", c.data(), "-U", "postgres", "-A", "trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.Start()
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	return c
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
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
