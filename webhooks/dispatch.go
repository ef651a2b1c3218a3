package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/restjson"
)

// Body is what a delivery POSTs, as JSON.
type Body struct {
	// ID is the event's id: receivers deduplicate by it.
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	CreatedAt string   `json:"createdAt"`
	Data      BodyData `json:"data"`
}

// BodyData is the event's payload.
type BodyData struct {
	// Payment is the payment right after the event, as REST shows it.
	Payment restjson.Payment `json:"payment"`
	// Refund is a PAYMENT_REFUNDED event's refund, null otherwise.
	Refund *restjson.Refund `json:"refund"`
	// IdempotencyKey is the key of the request that caused the event.
	IdempotencyKey string `json:"idempotencyKey"`
}

// claim is one delivery an instance holds, with what it takes to make the
// attempt.
type claim struct {
	ID         int64
	EventID    int64
	EventSeq   int64
	EndpointID string
	Retries    int
	EventAt    time.Time
	ExpiresAt  *time.Time
	URL        string
	Secret     string
	// ClientID is the endpoint's client ("" for every client's).
	ClientID string
	Token    int64
	// HasRefunds: the event's payment has a refund, made by the event or
	// since; the body reads its refunds only then.
	HasRefunds bool
	// Body is the body stored when the delivery failed: a resent delivery
	// sends it as it was, without reading its event. Nil otherwise.
	Body *string
}

// result is the outcome of one attempt.
type result struct {
	claim
	at      time.Time
	took    time.Duration
	sent    bool   // the request was made; not for a bad URL or an unopened secret
	status  int    // HTTP status; 0 without an answer
	problem string // what went wrong, or the start of a non-2xx answer
	ok      bool
	// bodyCut: the answer's status came, but its body did not end (the
	// attempt's timeout, a reset): the endpoint hangs as much as one that
	// never answers, whatever the delivery's outcome.
	bodyCut bool
	// body is what the attempt sent (nil when the event could not be
	// read): stored with a delivery recorded FAILED, for a resend.
	body []byte
}

// maxAnswerBytes caps how much of an answer is read; maxShown how much of
// it is kept to show in the admin.
const (
	maxAnswerBytes = 64 << 10
	// maxAnswerHeaderBytes caps an answer's headers as maxAnswerBytes caps
	// its body: net/http would read up to 10 MB of them, in each of the
	// instance's concurrent attempts, for a receiver whose answer nobody
	// reads.
	maxAnswerHeaderBytes = 64 << 10
	maxShown             = 200
)

// claimBatch is the most deliveries one claim takes.
const claimBatch = 100

// Run delivers until ctx ends, then lets the attempts in flight finish
// (they have their own timeout) and records them.
func (s *Service) Run(ctx context.Context) {
	if s.events != nil {
		s.events.OnNew(s.Wake)
	}
	results := make(chan result, s.cfg.Concurrency)
	var flushed sync.WaitGroup
	flushed.Go(func() { s.recordResults(results) })

	slots := make(chan struct{}, s.cfg.Concurrency)
	freed := make(chan struct{}, 1)
	var inFlight sync.WaitGroup
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	for ctx.Err() == nil {
		s.unsigned.Flush() // tells the count of a burst that has stopped
		free := s.cfg.Concurrency - len(slots)
		// full: the last claim took all it asked for, so more may be due
		// as soon as a slot is free.
		full := false
		if free > 0 {
			batch, err := s.claim(ctx, min(free, claimBatch))
			if ctx.Err() == nil {
				s.claims.Report(err)
			}
			full = len(batch) > 0 && len(batch) == min(free, claimBatch)
			s.start(batch, slots, freed, &inFlight, results)
		} else {
			full = true
		}
		if full && len(slots) < s.cfg.Concurrency {
			continue
		}
		// A freed slot is worth a look whenever attempts are under way: the
		// last claim may have left due deliveries for endpoints or
		// clients that had no room then (busy).
		var slot <-chan struct{}
		if full || len(slots) > 0 {
			slot = freed
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-tick.C:
		case <-slot:
		}
	}
	inFlight.Wait()
	close(results)
	flushed.Wait()
}

// start makes the attempts of a claimed batch, each in its own goroutine.
func (s *Service) start(batch []claim, slots, freed chan struct{}, inFlight *sync.WaitGroup, results chan<- result) {
	if len(batch) == 0 {
		return
	}
	bodies, err := s.bodies(context.Background(), batch)
	for _, c := range batch {
		slots <- struct{}{}
		end := s.busy.begin(c)
		inFlight.Go(func() {
			v := notMade
			defer func() {
				end(v)
				<-slots
				select {
				case freed <- struct{}{}:
				default:
				}
			}()
			body, ok := bodies[c.ID]
			if !ok {
				// The event cannot be read (a database error, or swept):
				// count it as a failed attempt, retried like any other.
				problem := "the event could not be read"
				if err != nil {
					problem = "the event could not be read: database error"
				}
				results <- result{claim: c, at: s.now(), problem: problem}
				return
			}
			r := s.attempt(c, body)
			v = verdictOf(r)
			results <- r
		})
	}
}

// bodies is the JSON body of every delivery of a batch, by delivery id:
// a resent one's as stored when it failed (its event may be swept since),
// the others' built once per event. On a database error it still holds
// the stored ones. An event's payment lists the refunds made up to and
// including it, each as it was right after the event (payments.RefundsAt):
// one returned or failed later still shows what it was then.
func (s *Service) bodies(ctx context.Context, batch []claim) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(batch))
	seqs := make([]int64, 0, len(batch))
	for _, c := range batch {
		if c.Body != nil {
			out[c.ID] = []byte(*c.Body)
		} else {
			seqs = append(seqs, c.EventSeq)
		}
	}
	if len(seqs) == 0 {
		return out, nil
	}
	bySeq, err := s.events.BySeq(ctx, seqs)
	if err != nil {
		return out, err
	}
	var evs []events.Event
	for _, c := range batch {
		if e, ok := bySeq[c.EventSeq]; ok && e.ID == 0 {
			e.ID = c.EventID
			bySeq[c.EventSeq] = e
			evs = append(evs, e)
		}
	}
	// The claim said which events' payments have any refund (failed ones
	// too, whatever refundedAmount says): most have none, and a batch of
	// those reads no refunds.
	refunded := map[string]bool{}
	for _, c := range batch {
		if e, ok := bySeq[c.EventSeq]; ok && c.HasRefunds {
			refunded[e.Payment.ID] = true
		}
	}
	refunds := map[string][]models.Refund{}
	if len(refunded) > 0 {
		rows, err := s.store.refundsOf(ctx, slices.Collect(maps.Keys(refunded)))
		if err != nil {
			return out, fmt.Errorf("read refunds: %w", err)
		}
		for _, r := range rows {
			refunds[r.PaymentID] = append(refunds[r.PaymentID], r)
		}
	}
	byEvent := make(map[int64][]byte, len(evs))
	for _, e := range evs {
		// Refunds of one payment are serialised by its row lock, and each
		// carries its statements' times, as its events do.
		byEvent[e.ID] = EventBody(e, payments.RefundsAt(refunds[e.Payment.ID], e.Payment))
	}
	for _, c := range batch {
		if b, ok := byEvent[c.EventID]; ok && c.Body == nil {
			out[c.ID] = b
		}
	}
	return out, nil
}

// EventBody is the JSON body of a delivery of e, whose payment had the
// refunds given right after e.
func EventBody(e events.Event, refunds []payments.Refund) []byte {
	b := Body{ID: strconv.FormatInt(e.ID, 10), Type: string(e.Type), CreatedAt: restjson.Stamp(e.At),
		Data: BodyData{Payment: restjson.PaymentOf(e.Payment, refunds), IdempotencyKey: e.IdempotencyKey}}
	if e.Refund != nil {
		r := restjson.RefundOf(*e.Refund)
		b.Data.Refund = &r
	}
	out, err := json.Marshal(b)
	if err != nil {
		panic(err) // plain strings and slices: cannot fail
	}
	return out
}

// attempt POSTs body to the claim's endpoint once.
func (s *Service) attempt(c claim, body []byte) result {
	r := result{claim: c, at: s.now(), body: body}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		r.problem = "bad url"
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "CMPay-Webhooks/1")
	req.Header.Set(HeaderEventID, strconv.FormatInt(c.EventID, 10))
	secret, err := s.secrets.open(c.EndpointID, c.Secret)
	if err != nil {
		// Retried as any failed attempt: the operator may yet give the key.
		r.problem = clip("not sent: " + err.Error())
		s.unsigned.Log(slog.LevelError, "not signed", "webhook delivery not signed", "endpoint", c.EndpointID,
			"delivery", c.ID, "error", err)
		return r
	}
	req.Header.Set(HeaderSignature, Sign(secret, time.Now(), body))
	start := time.Now()
	r.sent = true
	res, err := s.client.Do(req)
	if err != nil {
		r.took = time.Since(start)
		r.problem = describe(err, s.cfg.AttemptTimeout)
		return r
	}
	head, headErr := io.ReadAll(io.LimitReader(res.Body, maxShown))
	_, restErr := io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswerBytes-maxShown))
	res.Body.Close()
	r.bodyCut = headErr != nil || restErr != nil
	r.took = time.Since(start)
	r.status = res.StatusCode
	r.ok = res.StatusCode >= 200 && res.StatusCode < 300
	switch {
	case r.ok:
	case res.StatusCode >= 300 && res.StatusCode < 400:
		r.problem = "redirect not followed: " + clip(res.Header.Get("Location"))
	default:
		r.problem = clip(string(head))
	}
	return r
}

// describe says why an attempt got no answer, without the URL (which may
// hold credentials) and briefly.
func describe(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, errBlockedAddress):
		return errBlockedAddress.Error()
	case errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "Client.Timeout"):
		return "no answer within " + timeout.String()
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	return clip(err.Error())
}

// clip keeps the start of s, valid UTF-8, for display.
func clip(s string) string {
	if len(s) > maxShown {
		s = s[:maxShown]
	}
	return strings.ToValidUTF8(strings.TrimRightFunc(s, func(r rune) bool { return r == utf8.RuneError }), "")
}

// backoff is the wait after the nth failed attempt in a row: RetryMin,
// then twice as long each time, at most MaxRetryInterval.
func (s *Service) backoff(n int) time.Duration {
	d := s.cfg.RetryMin
	for i := 1; i < n && d < MaxRetryInterval; i++ {
		d *= 2
	}
	return min(d, MaxRetryInterval)
}

// outcome is what a result makes of its delivery.
type outcome struct {
	status  string
	next    time.Time
	retries int
}

// outcome counts the wait before a retry from when the attempt ended, not
// when it started: a receiver that never answers is not called again the
// moment its attempt times out, and no retry is planned past the
// delivery's deadline, however long the attempt took.
func (s *Service) outcome(r result) outcome {
	if r.ok {
		return outcome{status: "DELIVERED", next: r.at, retries: r.Retries}
	}
	retries := r.Retries + 1
	next := r.at.Add(r.took).Add(s.backoff(retries))
	deadline := r.EventAt.Add(s.cfg.MaxAge)
	if r.ExpiresAt != nil {
		deadline = *r.ExpiresAt
	}
	if next.After(deadline) {
		return outcome{status: "FAILED", next: r.at, retries: retries}
	}
	return outcome{status: "PENDING", next: next, retries: retries}
}

// recordResults writes outcomes in batches: whatever has arrived by the
// time the previous batch is written.
func (s *Service) recordResults(results <-chan result) {
	for r := range results {
		batch := []result{r}
	more:
		for len(batch) < 200 {
			select {
			case r, ok := <-results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		s.record(batch)
	}
}

// record writes a batch of outcomes, each only where its claim still holds
// (the token matches), with one attempt row each; and tells the hooks.
func (s *Service) record(batch []result) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	outs := make([]outcome, len(batch))
	for i, r := range batch {
		outs[i] = s.outcome(r)
	}
	if err := s.store.record(ctx, batch, outs); err != nil {
		// The leases run out and the deliveries are attempted again: at
		// least once, never lost.
		s.records.Fail(err, "count", len(batch))
		return
	}
	s.records.OK()
	for _, o := range outs {
		if o.status == "PENDING" {
			s.wakeAt(o.next)
		}
	}
	h := s.cfg.Hooks
	for i, r := range batch {
		if h.Attempted != nil && r.sent {
			h.Attempted(r.took, r.ok)
		}
		switch outs[i].status {
		case "DELIVERED":
			if h.Delivered != nil {
				// The event's time is the payments package's, by the
				// database's clock; this instance's may differ a little.
				h.Delivered(max(0, r.at.Add(r.took).Sub(r.EventAt)))
			}
		case "FAILED":
			if h.Failed != nil {
				h.Failed()
			}
		default:
			if h.Retried != nil {
				h.Retried()
			}
		}
	}
}

// claim takes up to n due deliveries for this instance, under a lease
// longer than an attempt may take and a fresh token, leaving room for
// every client and endpoint (see busy).
func (s *Service) claim(ctx context.Context, n int) ([]claim, error) {
	now := s.now()
	return s.store.claim(ctx, now, now.Add(leaseFor(s.cfg.AttemptTimeout)), rand.Int64N(1<<62)+1, n, s.busy.snapshot())
}

// busy counts this instance's attempts under way by endpoint and by
// client, so that claims are fair. An endpoint whose last attempt here was
// answered within fastAnswer takes what is due: it frees its slots at
// once. Any other (new, slow, hanging, unreachable) may have a sixteenth
// of the instance's Concurrency under way (at least one), and a client a
// quarter in all such attempts; each claim takes every client's oldest in
// turn. An endpoint that hangs then holds its own few slots for
// its attempt timeout and slows nobody else; a client with many slow endpoints
// slows only itself. One of its endpoints that has nothing under way and
// answered last time (or was never tried here) may still take one attempt
// while its client has fewer than a quarter and a sixteenth under way: a
// healthy endpoint is tried, and found fast, however many of its siblings
// hang, and those that hang do not take that room again.
type busy struct {
	perEndpoint, perClient int
	mu                     sync.Mutex
	endpoints, clients     map[string]int
	// last holds how each endpoint's last attempt here ended, and when,
	// but for those answered slowly, which count as never tried. Both
	// lists go into every claim, so an endpoint not attempted here for
	// lastKept is forgotten (as never tried) instead of kept for the
	// life of the process, whatever the number of clients.
	last map[string]lastAttempt
	now  func() time.Time
}

// lastAttempt is how an endpoint's last attempt here ended, and when.
type lastAttempt struct {
	v  verdict
	at time.Time
}

// lastKept is how long busy remembers an endpoint's last attempt.
const lastKept = time.Hour

// verdict is how an attempt ended, as claims weigh it.
type verdict int8

const (
	// notMade: no request was sent (the event could not be read, the
	// secret not opened); it says nothing of the endpoint.
	notMade verdict = iota
	// answeredFast: any status within fastAnswer.
	answeredFast
	// answeredSlowly: any status, later than fastAnswer.
	answeredSlowly
	// unanswered: no answer (timeout, refused, reset), or a status whose
	// body never ended.
	unanswered
)

// verdictOf is how r's attempt ended.
func verdictOf(r result) verdict {
	switch {
	case !r.sent:
		return notMade
	case r.bodyCut, r.status == 0:
		return unanswered
	case r.took < fastAnswer:
		return answeredFast
	}
	return answeredSlowly
}

// fastAnswer is how soon an endpoint must answer (any status) to count as
// fast.
const fastAnswer = time.Second

func newBusy(concurrency int) *busy {
	return &busy{perEndpoint: max(1, concurrency/16), perClient: max(1, concurrency/4),
		endpoints: map[string]int{}, clients: map[string]int{}, last: map[string]lastAttempt{}, now: time.Now}
}

func (b *busy) snapshot() inFlight {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := inFlight{PerEndpoint: b.perEndpoint, PerClient: b.perClient,
		Endpoints: maps.Clone(b.endpoints), Clients: maps.Clone(b.clients)}
	forgotten := b.now().Add(-lastKept)
	for id, a := range b.last {
		if a.at.Before(forgotten) {
			delete(b.last, id)
			continue
		}
		switch a.v {
		case answeredFast:
			l.Fast = append(l.Fast, id)
		case unanswered:
			l.Silent = append(l.Silent, id)
		}
	}
	return l
}

// begin counts c's attempt as under way unless its endpoint is fast, and
// returns what ends it: end(how the attempt ended).
func (b *busy) begin(c claim) (end func(verdict)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	counted := b.last[c.EndpointID].v != answeredFast
	if counted {
		b.endpoints[c.EndpointID]++
		b.clients[c.ClientID]++
	}
	return func(v verdict) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch v {
		case notMade:
		case answeredSlowly:
			delete(b.last, c.EndpointID)
		default:
			b.last[c.EndpointID] = lastAttempt{v: v, at: b.now()}
		}
		if !counted {
			return
		}
		for m, key := range map[*map[string]int]string{&b.endpoints: c.EndpointID, &b.clients: c.ClientID} {
			if (*m)[key]--; (*m)[key] <= 0 {
				delete(*m, key) // only what is under way: the map stays small
			}
		}
	}
}

// Backlog counts the deliveries not yet delivered nor given up.
func (s *Service) Backlog(ctx context.Context) (int64, error) {
	return s.store.backlog(ctx)
}

// wakeAt makes sure the dispatcher looks again at t, when a retry this
// instance scheduled falls due (it polls besides, but a retry should not
// wait for the poll). One timer, set to the earliest such time.
func (s *Service) wakeAt(t time.Time) {
	s.timer.Lock()
	defer s.timer.Unlock()
	if s.timer.t != nil && !s.timer.at.After(t) && s.timer.at.After(time.Now()) {
		return
	}
	if s.timer.t != nil {
		s.timer.t.Stop()
	}
	s.timer.at = t
	s.timer.t = time.AfterFunc(time.Until(t), s.Wake)
}
