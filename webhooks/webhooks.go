// Package webhooks delivers payment events to the URLs API clients
// register: signed POSTs, retried with exponential backoff until they are
// answered with a 2xx or WEBHOOK_MAX_AGE has passed.
//
// Deliveries are rows (models.WebhookDelivery), created by the events
// sequencer in the transaction that numbers their event, so that no
// numbered event misses an endpoint. Every instance runs a dispatcher that
// claims due deliveries (FOR UPDATE SKIP LOCKED on PostgreSQL, so that two
// instances never claim the same one) under a lease longer than an
// attempt's timeout, makes the attempts concurrently, and records each
// outcome only if it still holds the claim. An instance that dies
// mid-attempt leaves its leases to run out; another instance then makes the
// attempt again. Delivery is at least once: receivers deduplicate by the
// event id.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/secrets"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// requestTimeout bounds what a request asks of the webhooks' tables (an
// endpoint created, listed or deleted, a resend, the admin's page): while
// the database does not answer, the request fails (SERVICE_UNAVAILABLE)
// instead of waiting for it.
const requestTimeout = 10 * time.Second

// Defaults of Config.
const (
	DefaultRetryMin = 5 * time.Second
	DefaultMaxAge   = 72 * time.Hour
	// MaxRetryInterval caps the backoff: attempts are at most an hour apart.
	MaxRetryInterval = time.Hour
	// DefaultEndpointsPerClient caps the endpoints one client (or, all
	// together, the endpoints of no client) may have at once
	// (WEBHOOK_ENDPOINTS_PER_CLIENT).
	DefaultEndpointsPerClient = 20
	// AttemptTimeout is how long an endpoint has to answer, unless
	// Config.AttemptTimeout says otherwise.
	AttemptTimeout = 10 * time.Second
	// lease is how long a claim keeps other instances away, at the default
	// AttemptTimeout (leaseFor).
	lease = AttemptTimeout + AttemptTimeout/2
)

// leaseFor is how long a claim keeps other instances away when an attempt
// may take timeout: half as long again, so that a live instance always
// records its attempt before anyone else may try.
func leaseFor(timeout time.Duration) time.Duration { return timeout + timeout/2 }

// Config tunes a Service. The zero value is usable.
type Config struct {
	// RetryMin is the wait before the first retry; each retry waits twice as
	// long as the one before, up to an hour (WEBHOOK_RETRY_MIN).
	RetryMin time.Duration
	// MaxAge is how long after its event a delivery is retried; then it is
	// marked failed (WEBHOOK_MAX_AGE).
	MaxAge time.Duration
	// AllowPrivate lets endpoints reach loopback, private and link-local
	// addresses (WEBHOOK_ALLOW_PRIVATE): for development and tests only.
	AllowPrivate bool
	// Resolver looks up endpoint hosts at creation; nil means the system's.
	Resolver Resolver
	// Concurrency is how many attempts one instance makes at once; zero
	// means 64.
	Concurrency int
	// EndpointsPerClient is the most endpoints one client may have at
	// once (WEBHOOK_ENDPOINTS_PER_CLIENT); zero means
	// DefaultEndpointsPerClient.
	EndpointsPerClient int
	// AttemptTimeout is how long an endpoint has to answer
	// (WEBHOOK_ATTEMPT_TIMEOUT); zero means AttemptTimeout, the contract's
	// 10 s. Claims last half as long again. Tests that kill an instance
	// shorten it, so that its claims run out sooner.
	AttemptTimeout time.Duration
	// Poll is how often the dispatcher looks for due deliveries without
	// being woken; zero means 500ms.
	Poll time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Hooks are told what happens (metrics).
	Hooks Hooks
	// SecretKey, if set, seals the endpoints' signing secrets at rest
	// (WEBHOOK_SECRET_KEY, KeySize bytes); PreviousSecretKey only opens
	// them, while a key is rotated (WEBHOOK_SECRET_KEY_PREVIOUS). See
	// secret.go.
	SecretKey, PreviousSecretKey []byte
}

// Hooks are told of every attempt's outcome. Nil fields are skipped.
type Hooks struct {
	// Attempted: an attempt took took (the HTTP exchange), and ok says
	// whether it was answered with a 2xx.
	Attempted func(took time.Duration, ok bool)
	// Delivered: a delivery succeeded, lag after its event.
	Delivered func(lag time.Duration)
	// Retried: an attempt failed and the delivery will be retried.
	Retried func()
	// Failed: a delivery ran out of retries.
	Failed func()
}

// Service manages endpoints and delivers to them.
type Service struct {
	store   store
	events  *events.Service
	cfg     Config
	log     *slog.Logger
	guard   guard
	secrets secretBox
	client  *http.Client
	wake    chan struct{}
	busy    *busy
	// claims, records and unsigned sum up what fails again and again (the
	// database down, a secret no key opens) instead of a line each time.
	claims, records *logrepeat.Failures
	unsigned        *logrepeat.Sampler
	timer           struct {
		sync.Mutex
		t  *time.Timer
		at time.Time
	}
	// background runs Run between Start and Stop (background.go).
	background startstop.Base
}

// New returns a Service over db (migrated), reading events from ev.
func New(db *gorm.DB, ev *events.Service, cfg Config) (*Service, error) {
	st, err := newStore(db)
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.EndpointsPerClient <= 0 {
		cfg.EndpointsPerClient = DefaultEndpointsPerClient
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = AttemptTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	secrets, err := newSecretBox(cfg.SecretKey, cfg.PreviousSecretKey)
	if err != nil {
		return nil, err
	}
	s := &Service{store: st, events: ev, cfg: cfg, log: cfg.Logger,
		guard: guard{allowPrivate: cfg.AllowPrivate, resolver: cfg.Resolver}, secrets: secrets, wake: make(chan struct{}, 1),
		busy: newBusy(cfg.Concurrency)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.claims = &logrepeat.Failures{Logger: s.log, What: "webhooks: claim deliveries"}
	s.records = &logrepeat.Failures{Logger: s.log, What: "webhooks: record attempts"}
	s.unsigned = &logrepeat.Sampler{Logger: s.log}
	s.client = newClient(s.guard, cfg.Concurrency, cfg.AttemptTimeout)
	return s, nil
}

// newClient is the HTTP client deliveries are made with: it dials only
// addresses the guard allows, follows no redirect, uses no proxy.
func newClient(g guard, conns int, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           4 * conns,
			MaxIdleConnsPerHost:    conns,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    5 * time.Second,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: maxAnswerHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// Endpoint is a registered webhook URL.
type Endpoint struct {
	ID  string
	URL string
	// Events are the types it receives; every type when it asked for all.
	Events []payments.EventType
	// ClientID is the only client whose events it receives; "" for all.
	ClientID  string
	CreatedAt time.Time
}

func endpointFromRow(r models.WebhookEndpoint) Endpoint {
	e := Endpoint{ID: r.ID, URL: r.URL, ClientID: r.ClientID, CreatedAt: r.CreatedAt.UTC()}
	if r.EventTypes == "" {
		e.Events = slices.Clone(payments.EventTypes)
	} else {
		for _, t := range strings.Split(strings.Trim(r.EventTypes, ","), ",") {
			e.Events = append(e.Events, payments.EventType(t))
		}
	}
	return e
}

func invalid(field, msg string) error {
	return &payments.InvalidInputError{Problems: []payments.Problem{{Field: field, Message: msg}}}
}

// CreateEndpoint registers rawURL for the event types given (every type
// when types is nil), for client's events only when client is not "". It
// returns the endpoint and its signing secret, which is never shown again.
// A bad URL, or one that resolves to a loopback, private or link-local
// address, fails with a *payments.InvalidInputError.
func (s *Service) CreateEndpoint(ctx context.Context, client, rawURL string, types []payments.EventType) (Endpoint, string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	u, err := s.guard.checkURL(ctx, rawURL)
	if err != nil {
		return Endpoint{}, "", invalid("url", err.Error())
	}
	stored := ""
	if types != nil {
		if len(types) == 0 {
			return Endpoint{}, "", invalid("events", "events must name at least one event type, or be left out for every type")
		}
		var list []string
		for _, t := range payments.EventTypes { // the documented order, each once
			if slices.Contains(types, t) {
				list = append(list, string(t))
			}
		}
		for _, t := range types {
			if !t.Valid() {
				return Endpoint{}, "", invalid("events", "events holds a value that is not an event type")
			}
		}
		if len(list) < len(payments.EventTypes) {
			stored = "," + strings.Join(list, ",") + ","
		}
	}
	secret, id := newSecret(), "we_"+ulid.Make().String()
	row := models.WebhookEndpoint{ID: id, URL: u.String(), Secret: s.secrets.seal(id, secret),
		EventTypes: stored, ClientID: client, CreatedAt: s.now()}
	added, err := s.store.addEndpoint(ctx, row, s.cfg.EndpointsPerClient)
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	if !added {
		return Endpoint{}, "", invalid("url", fmt.Sprintf(
			"this client already has %d webhook endpoints, the most it may have: delete one first", s.cfg.EndpointsPerClient))
	}
	return endpointFromRow(row), secret, nil
}

// newSecret is a new signing secret, prefixed as Stripe's are.
func newSecret() string { return "whsec_" + secrets.Random() }

// Owner is whose endpoints a caller lists and deletes: those of Client
// ("" for the endpoints of no client), or with All every client's.
type Owner struct {
	Client string
	All    bool
}

// OwnerOf is the Owner of a caller bound to client ("" for none).
func OwnerOf(client string) Owner { return Owner{Client: client, All: client == ""} }

// Endpoints lists the endpoints client may see (all of them for ""),
// oldest first.
func (s *Service) Endpoints(ctx context.Context, client string) ([]Endpoint, error) {
	return s.EndpointsOf(ctx, OwnerOf(client))
}

// EndpointsOf lists o's endpoints, oldest first.
func (s *Service) EndpointsOf(ctx context.Context, o Owner) ([]Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	rows, err := s.store.endpoints(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	out := make([]Endpoint, len(rows))
	for i, r := range rows {
		out[i] = endpointFromRow(r)
	}
	return out, nil
}

// DeleteEndpointOf deletes the endpoint id if o may see it, and cancels
// its pending deliveries; it reports whether there was such an endpoint.
// An endpoint o may not see is ErrForbidden, and is left as it is.
func (s *Service) DeleteEndpointOf(ctx context.Context, o Owner, id string) (bool, error) {
	if !storable.Text(id) {
		// No endpoint has such an id, and PostgreSQL would refuse the
		// query (SQLSTATE 22021) rather than find nothing.
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	found, err := s.store.deleteEndpoint(ctx, o, id, s.now())
	if err != nil {
		return false, fmt.Errorf("delete webhook endpoint: %w", err)
	}
	return found, nil
}

// ErrForbidden: the endpoint belongs to a client (or to no client) whose
// endpoints the caller may not change; nothing was changed.
var ErrForbidden = errors.New("the webhook endpoint belongs to another client")

// ErrNotFailed: a resend found the delivery not failed (already resent,
// delivered, or unknown).
var ErrNotFailed = errors.New("the delivery is not failed")

// ErrNothingToSend: a resend found the delivery FAILED with nothing to
// send: it failed before failed deliveries kept their body (schema version
// 12), and its event, which the body would be built from, is gone. Nothing
// was changed.
var ErrNothingToSend = errors.New("the delivery failed before its body was kept, and its event is gone: nothing to send")

// Audit writes the audit log's entry for a staff member's resend, in the
// resend's own transaction: the change and its entry commit together, or
// neither does (package staff makes them: staff.Store.ResendAudit). It
// must write through tx alone: on SQLite the server has one connection,
// which tx holds. changed is false when the resend changed nothing. A nil
// Audit records nothing; neither does a resend refused with
// ErrNothingToSend, which its caller records as it records a request it
// refused.
type Audit func(ctx context.Context, tx sqlq.Runner, changed bool) error

// Resend arms a failed delivery again, with a fresh schedule of retries.
// It changes only a delivery that is still FAILED, in one conditional
// update, so a second click (or a second instance) changes nothing and
// gets ErrNotFailed. audit records it, changed or not. A delivery that
// has nothing to send is refused with ErrNothingToSend rather than armed
// to fail again: every attempt would find no event to build its body from.
func (s *Service) Resend(ctx context.Context, id int64, audit Audit) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	now := s.now()
	changed, err := s.store.rearm(ctx, id, now, now.Add(s.cfg.MaxAge), audit)
	if err != nil {
		return fmt.Errorf("resend delivery %d: %w", id, err)
	}
	if !changed {
		return ErrNotFailed
	}
	s.Wake()
	return nil
}

// Wake asks the dispatcher to look for due deliveries now; it never
// blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Delivery is a delivery as the admin shows it.
type Delivery struct {
	models.WebhookDelivery
	EventType string
	URL       string
	// NothingToSend: neither the body it sent nor its event is kept (it
	// failed before bodies were stored, and its event was swept), so a
	// resend is refused (ErrNothingToSend).
	NothingToSend bool
	// AttemptLog is the delivery's attempts, oldest first.
	AttemptLog []models.WebhookAttempt
}
