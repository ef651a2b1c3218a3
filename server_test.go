package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// binary is the server built once for every test here that runs it as a
// separate process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmpay-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "cmpay")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build server:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const testToken = "process-test-token"

// process is a server running as its own OS process.
type process struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
}

// startServer starts the binary on a free loopback port and waits until it
// says where it listens; env adds to its environment.
func startServer(t *testing.T, databaseURL string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+databaseURL,
		"ADDR=127.0.0.1:0",
		"API_TOKENS="+testToken,
		"ADMIN_PASSWORD=unused",
		"SHUTDOWN_TIMEOUT=10s",
	)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan error, 1)}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "CMPay listening on "); ok {
				urls <- rest
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("server log:\n%s", stderr.String())
		}
	})
	select {
	case p.url = <-urls:
		return p
	case err := <-p.exited:
		t.Fatalf("server exited before listening: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start in 30s\n%s", stderr.String())
	}
	return nil
}

type createResult struct {
	Data struct {
		CreatePayment *struct {
			Replayed bool
			Payment  struct{ ID string }
		}
	}
	Errors []struct{ Message string }
}

func createBody(key string) string {
	body, err := json.Marshal(map[string]any{
		"query":     `mutation($key: String!) { createPayment(input: {clientId: "shop-1", amount: "49.90", currency: "BRL", method: PIX}, idempotencyKey: $key) { replayed payment { id } } }`,
		"variables": map[string]any{"key": key},
	})
	if err != nil {
		panic(err)
	}
	return string(body)
}

func post(url, body string) (createResult, error) {
	req, err := http.NewRequest("POST", url+"/graphql", strings.NewReader(body))
	if err != nil {
		return createResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return createResult{}, err
	}
	defer res.Body.Close()
	var out createResult
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("status %d: %w", res.StatusCode, err)
	}
	if res.StatusCode != http.StatusOK || len(out.Errors) > 0 || out.Data.CreatePayment == nil {
		return out, fmt.Errorf("status %d, errors %+v", res.StatusCode, out.Errors)
	}
	return out, nil
}

// TestMultiProcessRace: three server processes share one PostgreSQL
// database; 90 simultaneous requests with one key, spread over them, make
// exactly one payment, and every request is answered with it.
func TestMultiProcessRace(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	servers := []*process{startServer(t, db.URL), startServer(t, db.URL), startServer(t, db.URL)}

	const n = 90
	results := make([]createResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = post(servers[i%len(servers)].url, createBody("multi-process-race"))
		})
	}
	close(start)
	wg.Wait()

	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if got, want := results[i].Data.CreatePayment.Payment.ID, results[0].Data.CreatePayment.Payment.ID; got != want {
			t.Fatalf("request %d got payment %s, request 0 got %s", i, got, want)
		}
		if !results[i].Data.CreatePayment.Replayed {
			created++
		}
	}
	var payments, attempts int64
	db.Gorm.Table("payments").Count(&payments)
	db.Gorm.Table("idempotency_attempts").Count(&attempts)
	if created != 1 || payments != 1 || attempts != n {
		t.Errorf("%d requests created, %d payments, %d attempts stored; want 1, 1, %d", created, payments, attempts, n)
	}
	t.Logf("%d requests over %d processes: %d payment, %d created + %d replayed", n, len(servers), payments, created, n-created)
}

// TestGracefulShutdown: SIGTERM while a request is in flight (its body half
// sent) lets that request finish with a full answer, refuses new
// connections, and exits 0.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := dbtest.Open(t, dialect)
			srv := startServer(t, db.URL)
			addr := strings.TrimPrefix(srv.url, "http://")

			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := createBody("in-flight")
			fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				addr, testToken, len(body), body[:20])
			time.Sleep(200 * time.Millisecond) // the server is now reading the body

			if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// New connections are refused once the listener closes.
			deadline := time.Now().Add(5 * time.Second)
			for {
				c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
				if err != nil {
					break
				}
				c.Close()
				if time.Now().After(deadline) {
					t.Fatal("still accepting connections 5s after SIGTERM")
				}
				time.Sleep(20 * time.Millisecond)
			}

			if _, err := io.WriteString(conn, body[20:]); err != nil {
				t.Fatalf("finish the in-flight body: %v", err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("in-flight request got no answer: %v", err)
			}
			defer res.Body.Close()
			var out createResult
			if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Data.CreatePayment == nil {
				t.Fatalf("in-flight request: status %d, %+v, %v", res.StatusCode, out, err)
			}

			select {
			case err := <-srv.exited:
				if err != nil {
					t.Errorf("server exit: %v, want status 0", err)
				}
				srv.exited <- err // for the cleanup
			case <-time.After(15 * time.Second):
				t.Fatal("server did not exit within its shutdown timeout")
			}
			var n int64
			db.Gorm.Table("payments").Count(&n)
			if n != 1 {
				t.Errorf("%d payments after shutdown, want the in-flight one", n)
			}
		})
	}
}

// TestGeneratedSecrets: without API_TOKENS and ADMIN_PASSWORD the server
// makes both up, prints each once, and the printed token works.
func TestGeneratedSecrets(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db.URL, "ADDR=127.0.0.1:0", "API_TOKENS=", "ADMIN_PASSWORD=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	var url, token string
	passwords := 0
	sc := bufio.NewScanner(stdout)
	for (url == "" || token == "" || passwords == 0) && sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "CMPay listening on "); ok {
			url = rest
		}
		if i := strings.Index(line, "API token (generated; set API_TOKENS to choose): "); i >= 0 {
			token = line[strings.LastIndex(line, " ")+1:]
		}
		if strings.HasPrefix(line, "Admin password for \"admin\" (generated") {
			passwords++
		}
	}
	if url == "" || token == "" || passwords != 1 {
		t.Fatalf("startup output: url %q, token %q, %d password lines", url, token, passwords)
	}
	req, _ := http.NewRequest("POST", url+"/graphql", strings.NewReader(`{"query":"{ payments { edges { cursor } } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("the printed token got status %d, want 200", res.StatusCode)
	}
}

func openDB(t *testing.T, url string) *gorm.DB {
	t.Helper()
	db, err := database.Open(url, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { database.Close(db) })
	return db
}

func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 || d > 5*time.Minute {
			t.Errorf("%s = %s, want a bound", name, d)
		}
	}
	if srv.ReadHeaderTimeout > 10*time.Second || srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("header limits: %s, %d bytes", srv.ReadHeaderTimeout, srv.MaxHeaderBytes)
	}
}

// A client that sends its headers a byte at a time is cut off.
func TestSlowClientIsCutOff(t *testing.T) {
	t.Parallel()
	srv := startServer(t, dbtest.SQLite(t).URL)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
	for time.Since(start) < 15*time.Second {
		if _, err := fmt.Fprint(conn, "X"); err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			break // closed by the server
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a slow client held its connection for %s", took)
	} else {
		t.Logf("a slow client was cut off after %s", took.Round(100*time.Millisecond))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
