package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exampleToken is the API token the examples' server accepts: the one the
// README has the reader start the server with.
const exampleToken = "dev-token"

// server is a CMPay process built from this checkout, on a SQLite file of
// its own, for the examples to run against.
type server struct {
	url    string // http://127.0.0.1:PORT
	bin    string // the folder holding the cmpay binary
	dbURL  string
	stderr string // the file its log goes to
}

// goBuild is `go build -o out pkg` in dir. It builds without the race
// detector even when the tests run with it: ./scripts/test.sh runs go vet
// first, which leaves every package compiled that way in the build cache,
// and a race-enabled server would make the examples' argon2 sign-ins
// several times slower.
func goBuild(dir, out, pkg string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	return cmd
}

// binaries is the folder the server is built into, once for the package
// (buildServer): every server of the tests runs the same binary, and a
// link of it takes seconds. TestMain makes it and removes it.
var binaries string

// buildServer builds the server from this checkout into binaries, once,
// or links to the one CMPAY_SERVER_BIN names (./scripts/test.sh builds it
// once for every test that runs the server).
var buildServer = sync.OnceValues(func() ([]byte, error) {
	if bin := os.Getenv("CMPAY_SERVER_BIN"); bin != "" {
		return nil, os.Symlink(bin, filepath.Join(binaries, "cmpay"))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	return goBuild(root, filepath.Join(binaries, "cmpay"), ".").CombinedOutput()
})

// startServer starts the server built by buildServer on a free port and a
// SQLite file of its own, env added to its environment. The process is
// stopped when the test ends.
func startServer(t *testing.T, env ...string) *server {
	t.Helper()
	dir := t.TempDir()
	s := &server{bin: binaries, dbURL: "sqlite:" + filepath.Join(dir, "cmpay.db"),
		stderr: filepath.Join(dir, "server.log")}
	if out, err := buildServer(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stdoutPath := filepath.Join(dir, "server.out")
	stdout, err := os.Create(stdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(s.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(filepath.Join(s.bin, "cmpay"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.dbURL, "ADDR=127.0.0.1:0", "API_TOKENS="+exampleToken)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	listening := regexp.MustCompile(`CMPay listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := os.ReadFile(stdoutPath)
		if m := listening.FindSubmatch(out); m != nil {
			s.url = string(m[1])
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(s.stderr)
			t.Fatalf("the server stopped before listening: %v\n%s", waitErr, log)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the server did not say where it listens within 30 s")
	return nil
}
