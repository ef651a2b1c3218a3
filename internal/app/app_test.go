package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/config"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/logtest"
	"github.com/cmpay/cmpay/internal/streamtest"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/webhooks"
)

const testToken = "app-test-token"

var quiet = slog.New(slog.DiscardHandler)

// testEnv is the environment a test server runs with: its own database, a
// free loopback port, a known token.
func testEnv(databaseURL string, more map[string]string) func(string) string {
	env := map[string]string{"DATABASE_URL": databaseURL, "ADDR": "127.0.0.1:0", "API_TOKENS": testToken,
		"ADMIN_PASSWORD": "unused-password", "SHUTDOWN_TIMEOUT": "5s"}
	for k, v := range more {
		env[k] = v
	}
	return func(k string) string { return env[k] }
}

// TestRunStopsEverything runs the whole server in this process, on each
// database, with the debug endpoints on: it answers, exports the gauges it
// hands its services to (cmpay_event_replays), and once its context
// ends Run returns having stopped every background service it started
// (the events service, the webhook dispatcher, the sweeper, the clock
// sync, the debug server, the replica's checks): TestMain's goleak finds
// no goroutine left.
func TestRunStopsEverything(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stdout, printed := io.Pipe()
		ran := make(chan error, 1)
		var logged logtest.Buffer
		go func() {
			ran <- Run(ctx, testEnv(db.URL, map[string]string{"DEBUG_ADDR": "127.0.0.1:0"}), printed, slog.New(slog.NewTextHandler(&logged, nil)))
			printed.Close()
		}()
		lines := bufio.NewScanner(stdout)
		var url, debugURL string
		for url == "" && lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), "Debug endpoints (pprof, expvar) on "); ok {
				debugURL = rest
			}
			if rest, ok := strings.CutPrefix(lines.Text(), "CMPay listening on "); ok {
				url = rest
			}
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }() // until Run closes it
		if url == "" || debugURL == "" {
			t.Fatalf("Run did not say where it listens (%q, debug %q): %v", url, debugURL, <-ran)
		}
		for _, u := range []string{url + "/healthz", debugURL} {
			res, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", u, res.StatusCode)
			}
		}
		// The gauges Run hands its services to are exported.
		req, _ := http.NewRequest("GET", url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		scraped, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cmpay_event_subscriptions 0", `cmpay_event_replays{state="reading"} 0`, `cmpay_event_replays{state="waiting"} 0`} {
			if !strings.Contains(string(scraped), want+"\n") {
				t.Errorf("/metrics has no %q", want)
			}
		}
		// The test's database is a copy of a migrated one: the start says
		// it found it as this build leaves it.
		if line := "msg=schema version=" + strconv.Itoa(database.LatestVersion()) + " up_to_date=true"; !strings.Contains(logged.String(), line) {
			t.Errorf("the start's log has no %q:\n%s", line, logged.String())
		}
		if _, err := createPayment(url, "run-1"); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v, want a clean stop", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s of its context's end")
		}
		http.DefaultClient.CloseIdleConnections()
	})
}

// createPayment creates a payment through the server at url and returns
// its id.
func createPayment(url, key string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation($k: String!) { createPayment(input: {clientId: "app", amount: "1.00", currency: "BRL", method: PIX}, idempotencyKey: $k) { payment { id } } }`,
		"variables": map[string]any{"k": key},
	})
	req, _ := http.NewRequest("POST", url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		Data struct {
			CreatePayment *struct{ Payment struct{ ID string } }
		}
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Data.CreatePayment == nil {
		return "", fmt.Errorf("createPayment: status %d, %v, %+v", res.StatusCode, err, out.Errors)
	}
	return out.Data.CreatePayment.Payment.ID, nil
}

// TestLongLivedSubscriptions: subscriptions outlive the server's read and
// write timeouts, which are for requests. The server is built as Run
// builds it, with both timeouts cut from 30 s to one, and the test lets
// two seconds pass: time passing is what it is about.
func TestLongLivedSubscriptions(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	url := "http://" + serveCut(t, timeout)
	wctx, wcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer wcancel()
	ws, err := streamtest.DialWS(wctx, url, "Bearer "+testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.Subscribe(wctx, "1", streamtest.EventsQuery, nil); err != nil {
		t.Fatal(err)
	}
	sse, err := streamtest.DialSSE(wctx, http.DefaultClient, url, "Bearer "+testToken, streamtest.EventsQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	<-time.After(2 * timeout)
	id, err := createPayment(url, "long-lived")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := ws.NextEvent(wctx); err != nil || e.Payment.ID != id {
		t.Errorf("WebSocket after twice the timeouts: %+v, %v", e, err)
	}
	if e, err := sse.NextEvent(); err != nil || e.Payment.ID != id {
		t.Errorf("SSE after twice the timeouts: %+v, %v", e, err)
	}
}

// TestSecretKeySize: the key configuration accepts (config.SecretKeySize
// bytes, as documented) is one the webhooks package can seal with.
func TestSecretKeySize(t *testing.T) {
	t.Parallel()
	cfg, err := config.FromEnv(testEnv("", map[string]string{"WEBHOOK_SECRET_KEY": strings.Repeat("ab", config.SecretKeySize)}))
	if err != nil {
		t.Fatal(err)
	}
	if config.SecretKeySize != webhooks.KeySize || len(cfg.WebhookSecretKey) != webhooks.KeySize {
		t.Errorf("configuration reads %d-byte keys, webhooks seals with %d", len(cfg.WebhookSecretKey), webhooks.KeySize)
	}
	if _, err := webhooks.New(dbtest.SQLite(t).Gorm, nil, webhooks.Config{SecretKey: cfg.WebhookSecretKey}); err != nil {
		t.Errorf("webhooks refuses the key configuration read: %v", err)
	}
}

// serveCut starts a server built as Run builds it, on SQLite, with its read
// and write timeouts cut to timeout, and returns its address; it stops when
// the test ends.
func serveCut(t *testing.T, timeout time.Duration) string {
	t.Helper()
	db := dbtest.SQLite(t)
	cfg, err := config.FromEnv(testEnv(db.URL, nil))
	if err != nil {
		t.Fatal(err)
	}
	replica, err := database.OpenReplica(db.Gorm, "", database.ReplicaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := build(ctx, db.Gorm, replica, cfg, processor.DefaultConfig(), io.Discard, quiet)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s.http.ReadTimeout, s.http.WriteTimeout = timeout, timeout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, ln, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return ln.Addr().String()
}
