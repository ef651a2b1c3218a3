package integration_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
)

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
			// The server asks for the body once its handler reads it: from
			// then on the request is in flight.
			answers := bufio.NewReader(conn)
			fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
				addr, testToken, len(body))
			waitContinue(t, conn, answers)
			io.WriteString(conn, body[:20])

			if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// New connections are refused once the listener closes.
			waitUntil(t, "connections refused after SIGTERM", 5*time.Second, 20*time.Millisecond, func() bool {
				c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
				if err != nil {
					return true
				}
				c.Close()
				return false
			})

			if _, err := io.WriteString(conn, body[20:]); err != nil {
				t.Fatalf("finish the in-flight body: %v", err)
			}
			res, err := http.ReadResponse(answers, nil)
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

// A request that does not finish (here, a body that never arrives) cannot
// hold the server past SHUTDOWN_TIMEOUT: the server then closes the
// remaining connections and exits cleanly.
func TestShutdownFinishesAnyway(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	srv := startServer(t, db.URL, "SHUTDOWN_TIMEOUT=1s")
	addr := strings.TrimPrefix(srv.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n",
		addr, testToken)
	waitContinue(t, conn, bufio.NewReader(conn)) // the server now reads the body
	io.WriteString(conn, "{")

	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.exited:
		srv.exited <- err // for the cleanup
		if err != nil {
			t.Errorf("server exit after %s: %v, want status 0", time.Since(start), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server still running 10s after SIGTERM with SHUTDOWN_TIMEOUT=1s")
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the stalled connection is still open after shutdown: %v", err)
	}
}

// Go's profiler and expvar are served on DEBUG_ADDR only, and only when
// it is set.
func TestDebugAddr(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	get := func(url string, admin bool) int {
		req, _ := http.NewRequest("GET", url, nil)
		if admin {
			req.SetBasicAuth("admin", "unused")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	on := startServer(t, db.URL, "DEBUG_ADDR=127.0.0.1:0")
	if on.debugURL == "" {
		t.Fatal("DEBUG_ADDR is set but no debug address was printed")
	}
	for _, path := range []string{"/debug/pprof/", "/debug/vars"} {
		if got := get(on.debugURL+path, false); got != http.StatusOK {
			t.Errorf("%s on DEBUG_ADDR: %d, want 200", path, got)
		}
		if got := get(on.url+path, true); got != http.StatusNotFound {
			t.Errorf("%s on the API's address, as admin: %d, want 404", path, got)
		}
	}
	off := startServer(t, dbtest.SQLite(t).URL)
	if off.debugURL != "" {
		t.Errorf("without DEBUG_ADDR the debug endpoints are served on %s", off.debugURL)
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

// waitContinue reads the server's "100 Continue", which it sends when the
// handler of a request sent with "Expect: 100-continue" first reads the
// body: the sign that the request is in the server's hands.
func waitContinue(t *testing.T, conn net.Conn, answers *bufio.Reader) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(answers, nil)
	if err != nil || res.StatusCode != http.StatusContinue {
		t.Fatalf("waiting for 100 Continue: %v, %v", res, err)
	}
	conn.SetReadDeadline(time.Time{})
}
