// Command cmpay-subprobe measures what GraphQL subscriptions cost a CMPay
// server: many subscriptions over a few WebSockets (the server's RSS before and after, and how many messages one
// payment fans out to), many SSE streams of one token, and subscriptions
// that replay a large outbox from `after: "0"` (the server's CPU seconds,
// its peak RSS, and how long a createPayment takes meanwhile).
//
// It starts the server binary it is given on a fresh database (SQLite, or
// a schema of CMPAY_TEST_DATABASE_URL), so that two builds can be measured
// the same way (docs/benchmarks/2026-12-04-subscription-limits.md says
// how).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cmpay/cmpay/database"
)

var (
	binary        = flag.String("server", "", "the CMPay server binary to measure")
	dialect       = flag.String("database", "sqlite", "sqlite, or postgres (a fresh schema of CMPAY_TEST_DATABASE_URL)")
	sockets       = flag.Int("sockets", 4, "WebSockets of the fan-out phase")
	subsPerSocket = flag.Int("subs", 10_000, "subscriptions sent over each of them")
	sseStreams    = flag.Int("sse", 500, "SSE streams of one token")
	outbox        = flag.Int("events", 22_650, "events in the outbox of the replay phase")
	replayers     = flag.Int("replayers", 20, `subscriptions with after: "0" of the replay phase`)
	replayFor     = flag.Duration("replay-timeout", 120*time.Second, "how long the replay phase may take")
	serverEnv     = flag.String("env", "", "extra server environment, comma-separated NAME=value")
	phases        = flag.String("phases", "fanout,sse,replay", "which phases to run, comma-separated")
	tokens        = flag.Int("tokens", 1, "API tokens the fan-out's sockets take in turn")
)

const token = "probe-token"

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *binary == "" {
		log.Fatal("give -server")
	}
	work, err := os.MkdirTemp("", "cmpay-subprobe-")
	check(err)
	defer os.RemoveAll(work)
	dbURL := freshDatabase(work)

	srv := startServer(*binary, dbURL)
	defer srv.stop()
	fmt.Printf("server %s on %s\n", filepath.Base(*binary), *dialect)
	time.Sleep(2 * time.Second) // let start-up garbage go before the first figure
	run := map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		run[strings.TrimSpace(p)] = true
	}
	if run["fanout"] {
		fanOut(srv)
	}
	if run["sse"] {
		sse(srv)
	}
	if run["replay"] {
		replay(srv)
	}
}

// freshDatabase returns the DATABASE_URL of an empty database.
func freshDatabase(work string) string {
	if *dialect == "sqlite" {
		return "sqlite:" + filepath.Join(work, "cmpay.db")
	}
	server := os.Getenv("CMPAY_TEST_DATABASE_URL")
	if server == "" {
		log.Fatal("-database postgres needs CMPAY_TEST_DATABASE_URL")
	}
	db, err := database.Open(server, database.Options{MaxOpenConns: 1})
	check(err)
	defer database.Close(db)
	schema := fmt.Sprintf("subprobe_%d", time.Now().UnixNano())
	check(db.Exec(`CREATE SCHEMA ` + schema).Error)
	u, err := url.Parse(server)
	check(err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// fanOut opens sockets × subs subscriptions, then creates one payment.
func fanOut(srv *server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	before := srv.memory("VmRSS")
	var next, errors atomic.Int64
	var codesMu sync.Mutex
	codes := map[string]int{}
	var conns []*websocket.Conn
	var wg sync.WaitGroup
	for i := range *sockets {
		c := dialAs(ctx, srv.url, tokenN(i%*tokens))
		conns = append(conns, c)
		wg.Go(func() {
			for {
				var m message
				if err := wsjson.Read(ctx, c, &m); err != nil {
					codesMu.Lock()
					codes[fmt.Sprintf("close %d", websocket.CloseStatus(err))]++
					codesMu.Unlock()
					return
				}
				switch {
				case m.Type == "next" && !bytes.Contains(m.Payload, []byte(`"errors"`)):
					next.Add(1)
				case m.Type == "next" || m.Type == "error": // a refusal
					errors.Add(1)
					codesMu.Lock()
					codes[errorCode(m.Payload)]++
					codesMu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for _, c := range conns {
		for i := range *subsPerSocket {
			err := wsjson.Write(ctx, c, message{ID: strconv.Itoa(i), Type: "subscribe",
				Payload: json.RawMessage(`{"query":"subscription { paymentEvents { id type payment { id status } } }"}`)})
			if err != nil {
				break // closed by the server: counted by the reader
			}
		}
	}
	// Settled: the gauge and the refusals stop moving.
	var live int
	for last, still := -1, 0; still < 3 && time.Since(start) < 2*time.Minute; time.Sleep(time.Second) {
		live = srv.gauge("cmpay_event_subscriptions")
		if n := live + int(errors.Load()); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	after, peak := srv.memory("VmRSS"), srv.memory("VmHWM")
	fmt.Printf("fan-out: %d sockets of %d tokens × %d subscriptions sent in %.1f s: %d following live events, %d refused %v\n",
		*sockets, *tokens, *subsPerSocket, time.Since(start).Seconds(), live, errors.Load(), codes)
	fmt.Printf("fan-out: RSS %d MB before, %d MB after (peak %d MB)\n", before/1024, after/1024, peak/1024)

	check(createPayment(srv.url, "fanout-1"))
	for last, still := int64(-1), 0; still < 2; time.Sleep(500 * time.Millisecond) {
		if n := next.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	fmt.Printf("fan-out: one payment → %d event messages\n", next.Load())
	for _, c := range conns {
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
	cancel()
	wg.Wait()
}

// sse opens sseStreams streams of one token at once and counts those the
// server kept open and those it refused.
func sse(srv *server) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open, refused atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for range *sseStreams {
		wg.Go(func() {
			body := `{"query":"subscription { paymentEvents { id } }"}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+"/graphql", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				refused.Add(1)
				mu.Lock()
				codes[fmt.Sprintf("HTTP %d", res.StatusCode)]++
				mu.Unlock()
				return
			}
			got := make(chan string, 1)
			go func() {
				r := bufio.NewReader(res.Body)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						got <- ""
						return
					}
					if data, ok := strings.CutPrefix(line, "data:"); ok {
						got <- errorCode([]byte(strings.TrimSpace(data)))
						return
					}
				}
			}()
			select {
			case code := <-got:
				refused.Add(1)
				mu.Lock()
				codes[code]++
				mu.Unlock()
			case <-time.After(3 * time.Second):
				open.Add(1)
			}
			<-ctx.Done()
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for open.Load()+refused.Load() < int64(*sseStreams) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("sse: %d streams of one token: %d open, %d refused %v\n", *sseStreams, open.Load(), refused.Load(), codes)
	cancel()
	wg.Wait()
}

// replay fills the outbox, then has replayers subscriptions read it from
// `after: "0"`, while a createPayment is timed every 100 ms.
func replay(srv *server) {
	fillOutbox(srv)
	baseline := idleBaseline(srv)

	ctx, cancel := context.WithTimeout(context.Background(), *replayFor)
	defer cancel()
	cpu0, rss0 := srv.cpu(), srv.memory("VmRSS")
	start := time.Now()
	count := &replayCount{codes: map[string]int{}}
	wait := subscribeAll(ctx, srv.url, count)
	// Meanwhile: a payment every 100 ms, timed; and the RSS, sampled.
	var latencies []time.Duration
	failed := map[string]int{}
	peak := rss0
	sampler := make(chan struct{})
	go func() {
		defer close(sampler)
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			t := time.Now()
			if err := createPayment(srv.url, fmt.Sprintf("during-%d", i)); err != nil {
				failed[err.Error()[strings.LastIndexByte(err.Error(), ' ')+1:]]++
			}
			latencies = append(latencies, time.Since(t))
			peak = max(peak, srv.memory("VmRSS"))
		}
	}()
	wait()
	elapsed := time.Since(start)
	cpu := srv.cpu() - cpu0
	cancel()
	<-sampler
	slices.Sort(latencies)
	q := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(p*float64(len(latencies)-1))]
	}
	fmt.Printf("replay: %d subscriptions after \"0\" over %d events: %d complete, %d events received in %.1f s, %v\n",
		*replayers, *outbox, count.done.Load(), count.received.Load(), elapsed.Seconds(), count.codes)
	own := cpu.Seconds() - baseline*elapsed.Seconds()
	fmt.Printf("replay: server CPU %.1f s (%.2f cores); less the baseline, %.1f s, %.0f µs per event; RSS %d MB before, peak %d MB\n",
		cpu.Seconds(), cpu.Seconds()/elapsed.Seconds(), own, own*1e6/float64(max(1, count.received.Load())), rss0/1024, peak/1024)
	fmt.Printf("replay: createPayment meanwhile: %d calls, p50 %v, p99 %v, max %v, failed %v\n",
		len(latencies), q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), q(1).Round(time.Millisecond), failed)
}

// replayCount is what the replaying subscriptions received: events, how
// many reached the last one, and how the others ended.
type replayCount struct {
	received, done atomic.Int64
	mu             sync.Mutex
	codes          map[string]int
}

// subscribeAll opens *replayers subscriptions after "0", five on each
// socket, each read into count until it reaches the last event or ends;
// the wait it returns returns once every one has.
func subscribeAll(ctx context.Context, url string, count *replayCount) (wait func()) {
	var readers sync.WaitGroup
	const perSocket = 5
	for s := 0; s < *replayers; s += perSocket {
		c := dial(ctx, url)
		subs := min(perSocket, *replayers-s)
		for i := range subs {
			check(wsjson.Write(ctx, c, message{ID: strconv.Itoa(i), Type: "subscribe",
				Payload: json.RawMessage(`{"query":"subscription { paymentEvents(after: \"0\") { id type payment { id status amount } } }"}`)}))
		}
		readers.Go(func() {
			defer c.CloseNow()
			finished := 0
			for finished < subs {
				var m message
				if err := wsjson.Read(ctx, c, &m); err != nil {
					return
				}
				switch m.Type {
				case "next":
					count.received.Add(1)
					if bytes.Contains(m.Payload, []byte(`"id":"`+strconv.Itoa(*outbox)+`"`)) {
						finished++
						count.done.Add(1)
					}
				case "error", "complete":
					finished++
					count.mu.Lock()
					count.codes[m.Type+" "+errorCode(m.Payload)]++
					count.mu.Unlock()
				}
			}
		})
	}
	return readers.Wait
}

// fillOutbox writes *outbox events, from 8 clients at once, and waits for
// the server to have numbered them and be idle again.
func fillOutbox(srv *server) {
	start := time.Now()
	var wg sync.WaitGroup
	var n atomic.Int64
	for range 8 {
		wg.Go(func() {
			for i := n.Add(1); i <= int64(*outbox); i = n.Add(1) {
				check(createPayment(srv.url, fmt.Sprintf("seed-%d", i)))
			}
		})
	}
	wg.Wait()
	fmt.Printf("replay: %d events written in %.0f s\n", *outbox, time.Since(start).Seconds())
	time.Sleep(2 * time.Second) // numbered, and the server idle again
}

// idleBaseline times the same createPayment every 100 ms as replay does,
// without the replay, and returns the cores the server spends meanwhile:
// what it spends on those calls and on being idle, to be told apart from
// what the replay costs.
func idleBaseline(srv *server) float64 {
	var idle []time.Duration
	idleCPU, idleStart := srv.cpu(), time.Now()
	for i := range 100 {
		t := time.Now()
		check(createPayment(srv.url, fmt.Sprintf("idle-%d", i)))
		idle = append(idle, time.Since(t))
		time.Sleep(100 * time.Millisecond)
	}
	baseline := float64(srv.cpu()-idleCPU) / float64(time.Since(idleStart))
	slices.Sort(idle)
	fmt.Printf("replay: createPayment every 100 ms, no replay: p50 %v, max %v; server CPU %.3f cores\n",
		idle[len(idle)/2].Round(time.Millisecond), idle[len(idle)-1].Round(time.Millisecond), baseline)
	return baseline
}

type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// tokenN is the nth API token the server accepts.
func tokenN(n int) string {
	if n == 0 {
		return token
	}
	return fmt.Sprintf("%s-%d", token, n)
}

func dial(ctx context.Context, base string) *websocket.Conn { return dialAs(ctx, base, token) }

func dialAs(ctx context.Context, base, tok string) *websocket.Conn {
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	check(err)
	c.SetReadLimit(1 << 20)
	check(wsjson.Write(ctx, c, message{Type: "connection_init", Payload: json.RawMessage(`{"Authorization":"Bearer ` + tok + `"}`)}))
	for {
		var m message
		check(wsjson.Read(ctx, c, &m))
		if m.Type == "connection_ack" {
			return c
		}
	}
}

// errorCode is the first extensions.code of a list of GraphQL errors (an
// error message's payload) or of a response's errors.
func errorCode(payload []byte) string {
	type gqlError struct{ Extensions struct{ Code string } }
	var list []gqlError
	if json.Unmarshal(payload, &list) != nil {
		var resp struct{ Errors []gqlError }
		if json.Unmarshal(payload, &resp) != nil {
			return "?"
		}
		list = resp.Errors
	}
	if len(list) == 0 {
		return "none"
	}
	return list[0].Extensions.Code
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// createPayment creates a payment, or returns why it could not.
func createPayment(base, key string) error {
	body, _ := json.Marshal(map[string]any{
		"query":     `mutation($k: String!) { createPayment(idempotencyKey: $k, input: {clientId: "probe", amount: "1.00", currency: "BRL", method: PIX}) { replayed } }`,
		"variables": map[string]any{"k": key},
	})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"errors"`)) {
		return fmt.Errorf("createPayment %s: %d %s", key, res.StatusCode, errorCode(out))
	}
	return nil
}

// server is the CMPay process under test.
type server struct {
	cmd *exec.Cmd
	url string
}

func startServer(binary, databaseURL string) *server {
	cmd := exec.Command(binary)
	var all []string
	for i := range *tokens {
		all = append(all, tokenN(i))
	}
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL, "ADDR=127.0.0.1:0", "API_TOKENS="+strings.Join(all, ","), "ADMIN_PASSWORD=probe")
	for _, kv := range strings.Split(*serverEnv, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	check(cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "CMPay listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return &server{cmd: cmd, url: rest}
		}
	}
	log.Fatal("the server exited before listening")
	return nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// memory reads a kB figure of /proc/<pid>/status (VmRSS, VmHWM).
func (s *server) memory(field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return 0
}

// cpu is the CPU time the server has used, user and system.
func (s *server) cpu() time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// gauge reads a metric's value from /metrics.
func (s *server) gauge(name string) int {
	req, _ := http.NewRequest(http.MethodGet, s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(rest, 64)
			return int(v)
		}
	}
	return -1
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
