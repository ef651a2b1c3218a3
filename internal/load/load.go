// Package load drives a running CMPay server over HTTP with traffic of a
// chosen shape (createPayment with new keys, replays, conflicting payloads,
// or a mix; capturePayment; refundPayment) from many concurrent clients,
// and measures what it gets back.
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is the shape of the traffic.
type Mode string

const (
	// New: every request a fresh key; every answer a new payment.
	New Mode = "new"
	// Replay: retries of already created payments; every answer a replay.
	Replay Mode = "replay"
	// Conflict: known keys with another amount; every answer
	// IDEMPOTENCY_KEY_REUSED.
	Conflict Mode = "conflict"
	// Mix: 80% new, 15% replay, 5% conflict.
	Mix Mode = "mix"
	// Floor: the GraphQL query { __typename }, which touches no database:
	// what HTTP, the middleware and GraphQL cost by themselves.
	Floor Mode = "floor"
	// Capture: capturePayment with a fresh key, each request on another of
	// Config.Payments (AUTHORIZED, SeedPayments), all of the authorization;
	// every answer a captured payment, not replayed.
	Capture Mode = "capture"
	// Refund: refundPayment of 0.01 with a fresh key, each request on one
	// of Config.Payments (CAPTURED, SeedPayments) picked at random, so that
	// refunds of one payment rarely meet (when they do, they queue on its
	// row lock); every answer a refund, not replayed, the payment
	// PARTIALLY_REFUNDED.
	Refund Mode = "refund"
)

// Config says what to send, where, and for how long.
type Config struct {
	URL     string // the server's base URL
	Token   string
	Clients int
	Warmup  time.Duration // sent but not measured
	Measure time.Duration
	Mode    Mode
	// SeedKeys is how many keys are created before the run for replays
	// and conflicts to use.
	SeedKeys int
	// Payments are the ids of the payments Capture and Refund act on,
	// stored beforehand (SeedPayments). A capture takes each once: a run
	// needs one for every capture it makes, warm-up included, and a client
	// that finds none left stops, counting the error.
	Payments []string
	// RunID keeps keys of different runs apart.
	RunID string
	// PaymentMethodToken, when set, makes the creates card payments
	// (CREDIT_CARD) with this token at the processor; PIX otherwise.
	PaymentMethodToken string
	// OnMeasure, if set, is called when the measured time starts and
	// again when it ends (the caller samples CPU time there, say).
	OnMeasure func(started bool)
}

// Result is what a run measured.
type Result struct {
	Mode               Mode
	Requests           int
	Elapsed            time.Duration
	P50, P90, P99, Max time.Duration
	// Outcomes counts the expected answers: created, replayed, rejected.
	Outcomes map[string]int
	// Errors counts unexpected answers by what they were.
	Errors map[string]int
}

// RPS is requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// ErrorCount is the number of unexpected answers.
func (r Result) ErrorCount() int {
	n := 0
	for _, c := range r.Errors {
		n += c
	}
	return n
}

type request struct {
	kind    string // the mode, or the part of the mix: what answer to expect
	payload []byte
}

const mutation = `mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }`

// bodyStart is a request body up to the key's value.
var bodyStart = func() []byte {
	q, _ := json.Marshal(mutation)
	return []byte(`{"query":` + string(q) + `,"variables":{"key":`)
}()

// body is the JSON of one createPayment request, built by appending: the
// load generator shares the machine with what it measures. Keys and amounts
// are printable ASCII, which Go quotes as JSON does.
func body(key, amount, token string) []byte {
	b := make([]byte, 0, len(bodyStart)+len(key)+len(amount)+len(token)+120)
	b = append(b, bodyStart...)
	b = strconv.AppendQuote(b, key)
	b = append(b, `,"in":{"clientId":"load","amount":`...)
	b = strconv.AppendQuote(b, amount)
	if token == "" {
		return append(b, `,"currency":"BRL","method":"PIX"}}}`...)
	}
	b = append(b, `,"currency":"BRL","method":"CREDIT_CARD","paymentMethodToken":`...)
	b = strconv.AppendQuote(b, token)
	return append(b, `}}}`...)
}

// The mutations of the capture and refund modes. What a client asks back
// is what it needs: the state it made, and for a refund the refund's id.
const (
	captureMutation = `mutation($id: ID!, $key: String!) { capturePayment(paymentId: $id, idempotencyKey: $key) { replayed payment { status } } }`
	refundMutation  = `mutation($id: ID!, $amount: Decimal, $key: String!) { refundPayment(paymentId: $id, amount: $amount, idempotencyKey: $key) { replayed refund { id } payment { status } } }`
)

// changeStart is the start of a capture's or refund's body, up to the
// payment id's value.
func changeStart(mutation string) []byte {
	q, _ := json.Marshal(mutation)
	return []byte(`{"query":` + string(q) + `,"variables":{"id":`)
}

var captureStart, refundStart = changeStart(captureMutation), changeStart(refundMutation)

// captureBody is the JSON of a capturePayment of all of payment id.
func captureBody(id, key string) []byte {
	b := make([]byte, 0, len(captureStart)+len(id)+len(key)+16)
	b = append(b, captureStart...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"key":`...)
	b = strconv.AppendQuote(b, key)
	return append(b, `}}`...)
}

// refundBody is the JSON of a refundPayment of amount from payment id.
func refundBody(id, amount, key string) []byte {
	b := make([]byte, 0, len(refundStart)+len(id)+len(amount)+len(key)+32)
	b = append(b, refundStart...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"amount":`...)
	b = strconv.AppendQuote(b, amount)
	b = append(b, `,"key":`...)
	b = strconv.AppendQuote(b, key)
	return append(b, `}}`...)
}

// errNoPayment is what a capture client counts when every seeded
// authorization has been captured: the run was seeded too few.
const errNoPayment = "no authorized payment left to capture"

// Run seeds the keys the mode needs, sends traffic for Warmup, then
// measures for Measure.
func Run(ctx context.Context, cfg Config) (Result, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return Result{}, err
	}
	if (cfg.Mode == Capture || cfg.Mode == Refund) && len(cfg.Payments) == 0 {
		return Result{}, fmt.Errorf("load: mode %s needs Config.Payments (SeedPayments)", cfg.Mode)
	}
	seeded := make([]string, cfg.SeedKeys)
	for i := range seeded {
		seeded[i] = fmt.Sprintf("%s-seed-%d", cfg.RunID, i)
	}
	if err := seed(ctx, u.Host, cfg, seeded); err != nil {
		return Result{}, err
	}

	var mu sync.Mutex
	res := Result{Mode: cfg.Mode, Outcomes: map[string]int{}, Errors: map[string]int{}}
	var captured atomic.Int64 // how many of cfg.Payments captures have taken
	var latencies []time.Duration

	warmEnd := time.Now().Add(cfg.Warmup)
	end := warmEnd.Add(cfg.Measure)
	if cfg.OnMeasure != nil {
		start := time.AfterFunc(cfg.Warmup, func() { cfg.OnMeasure(true) })
		defer start.Stop()
	}
	var wg sync.WaitGroup
	for w := range cfg.Clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			var mine []time.Duration
			outcomes, errs := map[string]int{}, map[string]int{}
			c := &conn{host: u.Host, token: cfg.Token}
			defer c.close()
			for n := 0; ; n++ {
				now := time.Now()
				if now.After(end) || ctx.Err() != nil {
					break
				}
				req, ok := next(cfg, rng, seeded, &captured, w, n)
				if !ok {
					errs[errNoPayment]++
					break
				}
				start := time.Now()
				got := c.send(req.payload)
				took := time.Since(start)
				if start.Before(warmEnd) {
					continue
				}
				mine = append(mine, took)
				if want := expected(req.kind); got == want {
					outcomes[got]++
				} else {
					errs[fmt.Sprintf("%s got %s", req.kind, got)]++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, mine...)
			for k, v := range outcomes {
				res.Outcomes[k] += v
			}
			for k, v := range errs {
				res.Errors[k] += v
			}
		})
	}
	wg.Wait()
	if cfg.OnMeasure != nil {
		cfg.OnMeasure(false)
	}

	res.Requests = len(latencies)
	res.Elapsed = cfg.Measure
	if len(latencies) > 0 {
		slices.Sort(latencies)
		at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
		res.P50, res.P90, res.P99, res.Max = at(.50), at(.90), at(.99), latencies[len(latencies)-1]
	}
	return res, ctx.Err()
}

// next picks the request a client sends next; false when a capture finds
// no payment left.
func next(cfg Config, rng *rand.Rand, seeded []string, captured *atomic.Int64, worker, n int) (request, bool) {
	kind := string(cfg.Mode)
	if cfg.Mode == Mix {
		switch p := rng.IntN(100); {
		case p < 80:
			kind = "new"
		case p < 95:
			kind = "replay"
		default:
			kind = "conflict"
		}
	}
	// A fresh key, only where one is sent: the load generator's CPU counts.
	fresh := func() string { return fmt.Sprintf("%s-%d-%d", cfg.RunID, worker, n) }
	switch kind {
	case "floor":
		return request{kind: kind, payload: floorBody}, true
	case "replay":
		key := seeded[rng.IntN(len(seeded))]
		return request{kind: kind, payload: body(key, "10.00", cfg.PaymentMethodToken)}, true
	case "conflict":
		key := seeded[rng.IntN(len(seeded))]
		return request{kind: kind, payload: body(key, "99.99", cfg.PaymentMethodToken)}, true
	case "capture":
		i := captured.Add(1) - 1
		if i >= int64(len(cfg.Payments)) {
			return request{}, false
		}
		return request{kind: kind, payload: captureBody(cfg.Payments[i], fresh())}, true
	case "refund":
		id := cfg.Payments[rng.IntN(len(cfg.Payments))]
		return request{kind: kind, payload: refundBody(id, RefundAmount, fresh())}, true
	}
	return request{kind: "new", payload: body(fresh(), "10.00", cfg.PaymentMethodToken)}, true
}

func expected(kind string) string {
	switch kind {
	case "replay":
		return "replayed"
	case "conflict":
		return "IDEMPOTENCY_KEY_REUSED"
	case "floor":
		return "typename"
	case "capture":
		return "captured"
	case "refund":
		return "refunded"
	}
	return "created"
}

// seed creates the keys replays and conflicts use, with the payload
// replays send ("10.00").
func seed(ctx context.Context, host string, cfg Config, keys []string) error {
	var wg sync.WaitGroup
	errs := make(chan string, len(keys))
	work := make(chan string)
	for range min(cfg.Clients, 16) {
		wg.Go(func() {
			c := &conn{host: host, token: cfg.Token}
			defer c.close()
			for key := range work {
				if ctx.Err() != nil {
					continue
				}
				if got := c.send(body(key, "10.00", cfg.PaymentMethodToken)); got != "created" && got != "replayed" {
					errs <- got
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for e := range errs {
		return fmt.Errorf("seed keys: %s", e)
	}
	return nil
}

// conn is one client's keep-alive HTTP/1.1 connection. It writes each
// request in one piece and classifies the answer by searching its bytes,
// parsing JSON only for an unexpected answer: the load generator shares the
// machine with the server and the database, so the less CPU it takes the
// less it distorts what it measures.
type conn struct {
	host, token string
	c           net.Conn
	r           *bufio.Reader
	buf         bytes.Buffer
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
	}
}

var (
	floorBody      = []byte(`{"query":"{ __typename }"}`)
	typenameAnswer = []byte(`{"data":{"__typename":"Query"}}`)
	replayedTrue   = []byte(`"replayed":true`)
	replayedFalse  = []byte(`"replayed":false`)
	keyReused      = []byte(`"IDEMPOTENCY_KEY_REUSED"`)
	// A capture or refund that was applied, as capturePayment and
	// refundPayment answer it (the fields in the order the mutations ask).
	capturedAnswer = []byte(`{"data":{"capturePayment":{"replayed":false,"payment":{"status":"CAPTURED"}}}}`)
	refundedAnswer = []byte(`"refundPayment":{"replayed":false,"refund":{"id":"ref_`)
	partlyRefunded = []byte(`"payment":{"status":"PARTIALLY_REFUNDED"}}}}`)
	statusField    = regexp.MustCompile(`"status":"(\w+)"`)
)

// send posts one GraphQL request and names the answer: "created",
// "replayed", "captured", "refunded", an error code, or what went wrong on
// the way.
func (c *conn) send(payload []byte) string {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.host, 10*time.Second)
		if err != nil {
			return "connect error"
		}
		c.c, c.r = nc, bufio.NewReaderSize(nc, 16<<10)
	}
	c.buf.Reset()
	fmt.Fprintf(&c.buf, "POST /graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		c.host, c.token, len(payload))
	c.buf.Write(payload)
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.c.Write(c.buf.Bytes()); err != nil {
		c.reset()
		return "write error"
	}
	status, raw, closing, err := readResponse(c.r)
	if err != nil {
		c.reset()
		return "read error"
	}
	if closing {
		c.reset()
	}
	switch {
	case status != http.StatusOK:
	case bytes.Equal(raw, capturedAnswer):
		return "captured"
	case bytes.Contains(raw, refundedAnswer) && bytes.HasSuffix(raw, partlyRefunded):
		return "refunded"
	case bytes.Contains(raw, replayedFalse) && !bytes.Contains(raw, []byte(`"status"`)):
		return "created"
	case bytes.Contains(raw, replayedTrue):
		return "replayed"
	case bytes.Contains(raw, keyReused):
		return "IDEMPOTENCY_KEY_REUSED"
	case bytes.Equal(raw, typenameAnswer):
		return "typename"
	}
	var out struct {
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	if json.Unmarshal(raw, &out) == nil && len(out.Errors) > 0 {
		return out.Errors[0].Extensions.Code
	}
	if m := statusField.FindSubmatch(raw); status == http.StatusOK && m != nil {
		// Applied, but not as expected: a refund that took all that was
		// left, say.
		return "payment " + string(m[1])
	}
	return fmt.Sprintf("status %d", status)
}

// readResponse reads one HTTP/1.1 response: its status, its body, and
// whether the server is closing the connection. It reads only what it
// needs from the headers (net/http's reader builds a header map per
// response, which showed in the load generator's profile).
func readResponse(r *bufio.Reader) (status int, body []byte, closing bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, false, fmt.Errorf("bad status line %q", line)
	}
	length, chunked := -1, false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, false, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		body, err = io.ReadAll(httputil.NewChunkedReader(r))
		if err == nil {
			// The chunked body ends with an empty trailer line.
			_, err = r.ReadSlice('\n')
		}
	case length >= 0:
		body = make([]byte, length)
		_, err = io.ReadFull(r, body)
	default:
		// No length: the body runs to the end of the connection.
		body, err = io.ReadAll(r)
		closing = true
	}
	return status, body, closing, err
}

func (c *conn) reset() {
	c.close()
	c.c = nil
}
