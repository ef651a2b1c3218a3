// Package stripedouble is a Stripe-compatible test double: a stateful
// HTTP server on a loopback port that implements the few endpoints CMPay's
// Stripe connector uses, with Stripe's documented idempotency semantics,
// a money ledger per PaymentIntent, fault injection on every endpoint,
// and signed events it can post to a URL.
//
// Stripe's own stripe-mock is stateless and ignores idempotency keys, so
// it cannot show that asking again after a fault never moves money twice;
// this double can. It implements:
//
//	POST /v1/payment_intents               create (and confirm)
//	POST /v1/payment_intents/{id}/capture  capture
//	POST /v1/payment_intents/{id}/cancel   cancel
//	POST /v1/refunds                       refund
//	GET  /v1/payment_intents/{id}          read
//	GET  /v1/payment_intents/search        search by metadata['cmpay_payment_id']
//	GET  /v1/payment_intents               list, newest first, by created
//	GET  /v1/refunds/{id}                  read a refund
//	GET  /v1/refunds?payment_intent=…      a payment's refunds
//
// Idempotency, as Stripe documents it: the first answer to a key (a 500
// too, once the request started executing) is given again for 24 hours
// with Idempotent-Replayed: true; the same key with other parameters or
// on another endpoint is a 400 idempotency_error; the same key while its
// first request still executes is a 409 idempotency_error
// (idempotency_key_in_use). Requests that fail validation
// before executing leave no result under their key. A stored 500 may be
// rolled forward later (RollForward), as Stripe may complete such a
// request during an incident's remediation: its object made, its events
// sent, its key still answering the 500.
package stripedouble

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Endpoint names one of the double's endpoints, for faults and counts.
type Endpoint string

// The endpoints.
const (
	CreatePaymentIntent  Endpoint = "POST /v1/payment_intents"
	CapturePaymentIntent Endpoint = "POST /v1/payment_intents/{id}/capture"
	CancelPaymentIntent  Endpoint = "POST /v1/payment_intents/{id}/cancel"
	CreateRefund         Endpoint = "POST /v1/refunds"
	GetPaymentIntent     Endpoint = "GET /v1/payment_intents/{id}"
	SearchPaymentIntents Endpoint = "GET /v1/payment_intents/search"
	ListPaymentIntents   Endpoint = "GET /v1/payment_intents"
	GetRefund            Endpoint = "GET /v1/refunds/{id}"
	ListRefunds          Endpoint = "GET /v1/refunds"
)

// Endpoints lists every endpoint.
var Endpoints = []Endpoint{CreatePaymentIntent, CapturePaymentIntent, CancelPaymentIntent, CreateRefund,
	GetPaymentIntent, SearchPaymentIntents, ListPaymentIntents, GetRefund, ListRefunds}

// FaultKind is what goes wrong with one request.
type FaultKind int

// The faults.
const (
	// NoFault: the request is handled normally.
	NoFault FaultKind = iota
	// DropRequest closes the connection before anything is processed.
	DropRequest
	// DropResponse processes the request (its answer is stored under its
	// key), then closes the connection without answering.
	DropResponse
	// Delay processes the request, then holds the answer for Fault.Delay
	// or until the client goes away; meanwhile the key is still
	// executing (a retry gets 409), and the answer is stored after.
	Delay
	// ServerErrorAfter processes the request, then answers 500; the 500 is
	// what the key replays.
	ServerErrorAfter
	// ServerErrorBefore answers 500 without processing; nothing is stored.
	ServerErrorBefore
	// RateLimit answers 429 without processing.
	RateLimit
	// Conflict answers 409 without processing, as for a key in use.
	Conflict
	// ServerErrorStored: the request started executing and failed inside
	// Stripe before doing anything; the 500 is stored under its key and
	// replayed for 24 hours, and nothing happened. On a read: a 500.
	ServerErrorStored
	// DependencyFailedAfter processes the request, then answers 424, as
	// Stripe does when a party outside it (a card network, a bank) failed
	// while the request executed: what that party did is not known, and the
	// 424 is what the key replays. On a read: a 500, as ServerErrorAfter.
	DependencyFailedAfter
)

var faultNames = []string{"none", "drop_request", "drop_response", "delay", "500_after", "500_before", "429", "409",
	"500_stored", "424_after"}

// String names the fault.
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("fault(%d)", int(k))
}

// Faults lists every fault but NoFault.
var Faults = []FaultKind{DropRequest, DropResponse, Delay, ServerErrorAfter, ServerErrorBefore, RateLimit, Conflict,
	ServerErrorStored, DependencyFailedAfter}

// Fault is one injected fault.
type Fault struct {
	Kind FaultKind
	// Delay is how long Delay holds the answer (default: an hour, that is
	// until the client gives up).
	Delay time.Duration
	// Hold, when not nil, makes Delay hold the answer until it is closed
	// (or the client gives up) instead: for tests that order two callers.
	// A read's answer is the record as it was when the request came.
	Hold <-chan struct{}
}

// Options configure a Double.
type Options struct {
	// Clock gives the double's time (created, the 24-hour key window,
	// search lag, event timestamps); default time.Now.
	Clock func() time.Time
	// SearchLag is how long a new PaymentIntent stays out of search
	// results (Stripe: up to a minute); default 0.
	SearchLag time.Duration
	// RefundsPending leaves new refunds pending until SettleRefund.
	RefundsPending bool
}

// Double is the running test double. Its methods are safe for concurrent
// use.
type Double struct {
	srv   *httptest.Server
	clock func() time.Time

	mu        sync.Mutex
	searchLag time.Duration
	pending   bool
	seq       int
	intents   map[string]*intent
	order     []string // intent ids in creation order
	refunds   map[string]*refund
	keys      map[string]*keyEntry
	keyOrder  []string // keys in the order of their first use
	calls     map[Endpoint]int
	planned   map[Endpoint]map[int]Fault
	random    *randomFaults
	events    []Event
}

type randomFaults struct {
	rng       *rand.Rand
	rate      float64
	kinds     []FaultKind
	delay     time.Duration
	endpoints map[Endpoint]bool
}

// New starts a double on a loopback port; Close stops it.
func New(opts Options) *Double {
	d := &Double{clock: opts.Clock, searchLag: opts.SearchLag, pending: opts.RefundsPending,
		intents: map[string]*intent{}, refunds: map[string]*refund{}, keys: map[string]*keyEntry{},
		calls: map[Endpoint]int{}, planned: map[Endpoint]map[int]Fault{}}
	if d.clock == nil {
		d.clock = time.Now
	}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	return d
}

// URL is the double's base URL, for STRIPE_API_BASE.
func (d *Double) URL() string { return d.srv.URL }

// Close stops the server, closing its open connections (a delayed answer
// included).
func (d *Double) Close() {
	d.srv.CloseClientConnections()
	d.srv.Close()
}

// FailNth makes the nth call (1-based, counted since New) to ep fail with f.
func (d *Double) FailNth(ep Endpoint, n int, f Fault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.planned[ep] == nil {
		d.planned[ep] = map[int]Fault{}
	}
	d.planned[ep][n] = f
}

// FailNext makes the next call to ep fail with f.
func (d *Double) FailNext(ep Endpoint, f Fault) {
	d.mu.Lock()
	n := d.calls[ep] + 1
	d.mu.Unlock()
	d.FailNth(ep, n, f)
}

// FailRandomly makes each call to the given endpoints (all when none)
// fail with probability rate, with a fault drawn from kinds (all when
// none), reproducibly from seed. Planned faults (FailNth) come first.
// A rate of 0 stops it.
func (d *Double) FailRandomly(seed uint64, rate float64, delay time.Duration, kinds []FaultKind, endpoints ...Endpoint) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rate <= 0 {
		d.random = nil
		return
	}
	if len(kinds) == 0 {
		kinds = Faults
	}
	if len(endpoints) == 0 {
		endpoints = Endpoints
	}
	r := &randomFaults{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), rate: rate,
		kinds: kinds, delay: delay, endpoints: map[Endpoint]bool{}}
	for _, ep := range endpoints {
		r.endpoints[ep] = true
	}
	d.random = r
}

// Calls counts the requests ep received, faulted ones included.
func (d *Double) Calls(ep Endpoint) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[ep]
}

// Keys lists the idempotency keys ep's requests carried, each once, in
// the order of their first use.
func (d *Double) Keys(ep Endpoint) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, k := range d.keyOrder {
		if e := d.keys[k]; e != nil && e.endpoint == ep {
			out = append(out, k)
		}
	}
	return out
}

// SetSearchLag changes the search lag.
func (d *Double) SetSearchLag(lag time.Duration) {
	d.mu.Lock()
	d.searchLag = lag
	d.mu.Unlock()
}

// call counts a request to ep and picks its fault.
func (d *Double) call(ep Endpoint) Fault {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[ep]++
	if f, ok := d.planned[ep][d.calls[ep]]; ok {
		delete(d.planned[ep], d.calls[ep])
		return f
	}
	if r := d.random; r != nil && r.endpoints[ep] && r.rng.Float64() < r.rate {
		return Fault{Kind: r.kinds[r.rng.IntN(len(r.kinds))], Delay: r.delay}
	}
	return Fault{}
}

// keyEntry is what Stripe keeps for an idempotency key.
type keyEntry struct {
	endpoint  Endpoint
	params    string // the canonical form of the parameters
	created   time.Time
	executing bool
	answer    answer
	// form and id are what a request whose 500 is stored without its
	// executing (ServerErrorStored) asked, for RollForward; rolled says
	// it has been rolled forward.
	form   url.Values
	id     string
	stored bool
	rolled bool
}

// keyTTL is how long Stripe keeps a key's answer.
const keyTTL = 24 * time.Hour

type answer struct {
	status int
	body   []byte
}

func (d *Double) serve(w http.ResponseWriter, r *http.Request) {
	ep, id := route(r.Method, r.URL.Path)
	if ep == "" {
		writeError(w, answerError(404, "invalid_request_error", "resource_missing", "Unrecognized request URL", ""))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer sk_test_") {
		writeError(w, answerError(401, "invalid_request_error", "api_key_invalid", "Invalid API Key provided", ""))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	form := r.URL.Query()
	if r.Method == http.MethodPost {
		if form, err = url.ParseQuery(string(body)); err != nil {
			writeError(w, answerError(400, "invalid_request_error", "parameter_invalid", "bad form body", ""))
			return
		}
	}
	fault := d.call(ep)
	switch fault.Kind {
	case DropRequest:
		hangUp(w)
		return
	case ServerErrorBefore:
		writeError(w, answerError(500, "api_error", "", "An unknown error occurred", ""))
		return
	case RateLimit:
		writeError(w, answerError(429, "invalid_request_error", "rate_limit", "Too many requests", ""))
		return
	case Conflict:
		writeKeyInUse(w)
		return
	}
	if r.Method == http.MethodGet {
		d.finish(w, r, fault, d.read(ep, id, form))
		return
	}
	d.write(w, r, fault, ep, id, form)
}

// write runs a POST under Stripe's idempotency rules.
func (d *Double) write(w http.ResponseWriter, r *http.Request, fault Fault, ep Endpoint, id string, form url.Values) {
	if a, bad := validate(ep, form); bad {
		writeError(w, a)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	params := form.Encode() + "|" + id
	d.mu.Lock()
	e := d.keys[key]
	if e != nil && d.clock().Sub(e.created) >= keyTTL {
		e = nil
	}
	switch {
	case key == "":
	case e != nil && (e.endpoint != ep || e.params != params):
		d.mu.Unlock()
		writeError(w, answerError(400, "idempotency_error", "",
			"Keys for idempotent requests can only be used with the same parameters they were first used with", ""))
		return
	case e != nil && e.executing:
		d.mu.Unlock()
		writeKeyInUse(w)
		return
	case e != nil:
		d.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		d.finish(w, r, fault, e.answer)
		return
	default:
		e = &keyEntry{endpoint: ep, params: params, created: d.clock(), executing: true}
		if d.keys[key] == nil {
			d.keyOrder = append(d.keyOrder, key)
		}
		d.keys[key] = e
	}
	var a answer
	if fault.Kind == ServerErrorStored {
		a = answerError(500, "api_error", "", "An unknown error occurred", "")
		if e != nil {
			e.form, e.id, e.stored = form, id, true
		}
	} else {
		a = d.execute(ep, id, form)
	}
	d.mu.Unlock()
	switch fault.Kind {
	case ServerErrorAfter:
		a = answerError(500, "api_error", "", "An unknown error occurred", "")
	case DependencyFailedAfter:
		a = answerError(http.StatusFailedDependency, "api_error", "",
			"The request could not be completed due to a failure in a dependency external to Stripe", "")
	}
	if fault.Kind == Delay {
		wait(r, fault)
	}
	if e != nil { // nil: a request without a key stores nothing
		d.mu.Lock()
		e.answer, e.executing = a, false
		d.mu.Unlock()
	}
	d.finish(w, r, fault, a)
}

// finish sends an answer, or hangs up (DropResponse), or sends it late
// (Delay, on a read: writes wait in write so the key stays executing).
func (d *Double) finish(w http.ResponseWriter, r *http.Request, fault Fault, a answer) {
	switch fault.Kind {
	case DropResponse:
		hangUp(w)
		return
	case Delay:
		if r.Method == http.MethodGet {
			wait(r, fault)
		}
		if r.Context().Err() != nil {
			return
		}
	case ServerErrorAfter, ServerErrorStored, DependencyFailedAfter:
		if r.Method == http.MethodGet { // a read stores nothing: a plain 500
			a = answerError(500, "api_error", "", "An unknown error occurred", "")
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", fmt.Sprintf("req_%d", time.Now().UnixNano()))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// wait holds an answer for f.Delay (an hour by default), or until f.Hold
// is closed, or until the client is gone.
func wait(r *http.Request, f Fault) {
	delay := f.Delay
	if delay <= 0 || f.Hold != nil {
		delay = time.Hour
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.Hold:
	case <-r.Context().Done():
	}
}

// hangUp closes the connection without a word.
func hangUp(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = buf.Flush()
	_ = conn.Close()
}

// route maps a request to its endpoint and the id in its path.
func route(method, path string) (Endpoint, string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 || parts[0] != "v1" {
		return "", ""
	}
	switch {
	case method == http.MethodPost && len(parts) == 2 && parts[1] == "payment_intents":
		return CreatePaymentIntent, ""
	case method == http.MethodPost && len(parts) == 4 && parts[1] == "payment_intents" && parts[3] == "capture":
		return CapturePaymentIntent, parts[2]
	case method == http.MethodPost && len(parts) == 4 && parts[1] == "payment_intents" && parts[3] == "cancel":
		return CancelPaymentIntent, parts[2]
	case method == http.MethodPost && len(parts) == 2 && parts[1] == "refunds":
		return CreateRefund, ""
	case method == http.MethodGet && len(parts) == 2 && parts[1] == "payment_intents":
		return ListPaymentIntents, ""
	case method == http.MethodGet && len(parts) == 3 && parts[1] == "payment_intents" && parts[2] == "search":
		return SearchPaymentIntents, ""
	case method == http.MethodGet && len(parts) == 3 && parts[1] == "payment_intents":
		return GetPaymentIntent, parts[2]
	case method == http.MethodGet && len(parts) == 3 && parts[1] == "refunds":
		return GetRefund, parts[2]
	case method == http.MethodGet && len(parts) == 2 && parts[1] == "refunds":
		return ListRefunds, ""
	}
	return "", ""
}

// RollForward completes now the request whose 500 is stored under key
// without its having executed (ServerErrorStored), as Stripe may during an
// incident's remediation: the object is made as the request asked, and its
// events are recorded (a card authorized for a later capture records
// payment_intent.amount_capturable_updated), while the key's stored answer
// stays the 500, replayed as before. It returns the id of the object made.
// A key rolls forward once; one with no such 500 is an error.
func (d *Double) RollForward(key string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.keys[key]
	if e == nil || !e.stored || e.rolled {
		return "", fmt.Errorf("stripedouble: key %q holds no stored 500 to roll forward", key)
	}
	e.rolled = true
	a := d.execute(e.endpoint, e.id, e.form)
	var made struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(a.body, &made); err != nil || a.status != http.StatusOK {
		return "", fmt.Errorf("stripedouble: rolling %q forward made nothing: %d %s", key, a.status, a.body)
	}
	if in := d.intents[made.ID]; in != nil && made.Status == "requires_capture" {
		d.emit("payment_intent.amount_capturable_updated", in.snapshot())
	}
	return made.ID, nil
}
