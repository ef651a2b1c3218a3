package stripedouble

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	stripeapi "github.com/stripe/stripe-go/v82"
)

// Event is an event the double recorded when one of its objects changed:
// payment_intent.succeeded, payment_intent.payment_failed,
// payment_intent.canceled, charge.refunded, refund.updated,
// charge.refund.updated, and payment_intent.amount_capturable_updated for
// an authorization a roll-forward made (RollForward).
type Event struct {
	ID      string
	Type    string
	Created time.Time
	// Body is the event as Stripe posts it (JSON).
	Body []byte
}

// emit records an event carrying a snapshot of object; d.mu is held.
func (d *Double) emit(typ string, object any) {
	now := d.clock()
	id := d.nextID("evt")
	body, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripeapi.APIVersion, "created": now.Unix(),
		"type": typ, "livemode": false, "pending_webhooks": 1,
		"data":    map[string]any{"object": object},
		"request": map[string]any{"id": nil, "idempotency_key": nil},
	})
	if err != nil {
		panic(err)
	}
	d.events = append(d.events, Event{ID: id, Type: typ, Created: now, Body: body})
}

// Events lists the events recorded so far, oldest first.
func (d *Double) Events() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Event(nil), d.events...)
}

// EventsFor lists the recorded events about one intent (its own, and its
// refunds' and charge's), oldest first.
func (d *Double) EventsFor(intentID string) []Event {
	var out []Event
	for _, e := range d.Events() {
		if bytes.Contains(e.Body, []byte(`"`+intentID+`"`)) {
			out = append(out, e)
		}
	}
	return out
}

// Sign is the Stripe-Signature header for body signed at t with secret
// (the whole whsec_… string is the HMAC key): "t=<unix>,v1=<hex
// HMAC-SHA256 of "<unix>.<body>">". Written here rather than taken from
// stripe-go's webhook package so that a test of CMPay's verification,
// which uses that package, checks it against an independent signer.
func Sign(body []byte, t time.Time, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", t.Unix())
	mac.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac.Sum(nil)))
}

// PostOptions change how PostEvent signs.
type PostOptions struct {
	// At is the signature's timestamp; zero means the double's clock now.
	At time.Time
	// BadSignature signs with another secret.
	BadSignature bool
}

// PostEvent posts one event to url signed with secret, as Stripe does,
// and returns the HTTP status it got.
func (d *Double) PostEvent(ctx context.Context, url, secret string, ev Event, opts PostOptions) (int, error) {
	at := opts.At
	if at.IsZero() {
		at = d.clock()
	}
	if opts.BadSignature {
		secret += "_wrong"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, fmt.Errorf("stripedouble: post event: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", Sign(ev.Body, at, secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("stripedouble: post event %s: %w", ev.ID, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Order is the order Deliver posts events in.
type Order int

// The orders.
const (
	InOrder Order = iota
	Reversed
	Shuffled
)

// Delivery says how Deliver posts a batch of events.
type Delivery struct {
	Order Order
	// Seed draws the shuffle (Shuffled) reproducibly.
	Seed uint64
	// Copies is how many times each event is posted (default 1):
	// Stripe delivers at least once.
	Copies int
	// Concurrent posts every copy at once rather than one after another.
	Concurrent bool
	PostOptions
}

// Deliver posts events to url in the delivery's order, copies and
// concurrency, and returns each post's status in the order posted (0
// where the post failed) with the first error.
func (d *Double) Deliver(ctx context.Context, url, secret string, events []Event, how Delivery) ([]int, error) {
	list := append([]Event(nil), events...)
	switch how.Order {
	case Reversed:
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	case Shuffled:
		rng := rand.New(rand.NewPCG(how.Seed, how.Seed+1))
		rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	}
	copies := max(how.Copies, 1)
	var posts []Event
	for _, e := range list {
		for range copies {
			posts = append(posts, e)
		}
	}
	statuses := make([]int, len(posts))
	errs := make([]error, len(posts))
	post := func(i int) { statuses[i], errs[i] = d.PostEvent(ctx, url, secret, posts[i], how.PostOptions) }
	if how.Concurrent {
		done := make(chan struct{})
		for i := range posts {
			go func() { post(i); done <- struct{}{} }()
		}
		for range posts {
			<-done
		}
	} else {
		for i := range posts {
			post(i)
		}
	}
	for _, err := range errs {
		if err != nil {
			return statuses, err
		}
	}
	return statuses, nil
}
