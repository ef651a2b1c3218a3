// Package events numbers the outbox's payment events and delivers them to
// subscribers: the GraphQL subscription and, through the deliveries it
// creates, the webhooks (package webhooks).
//
// # The outbox
//
// Every change of a payment writes an event row in the same statement or
// transaction as the change (package payments, events.go). Such a row has
// no public id yet: only its seq, the order of insertion.
//
// # Ordering: ids increase in commit order
//
// A sequence number given at insert does not increase in commit order: two
// transactions may commit in the opposite order of their inserts, and a
// reader that had seen the later insert commit first and moved its `after`
// past it would never see the other. So the public id is given only after
// commit, by one sequencer at a time, in the order the events become
// visible to it:
//
//   - PostgreSQL. One instance at a time is the leader: it holds a
//     session-level advisory lock on a connection of its own, so that a
//     leader that dies or loses its connection hands over at once. Every
//     50 ms while events come (200 ms when idle) it looks, in one snapshot,
//     at the committed events past its frontier, and numbers the new ones
//     after all those numbered before: events that became visible between
//     two looks come after those visible at the first, and within one look
//     they follow their inserts. The frontier is the seq below which every
//     committed event is numbered and no other will ever commit; it moves
//     by snapshots (sequencer's comment), and is saved every second with
//     the numbered seqs above it, so that a new leader carries on exactly.
//   - SQLite has one writer at a time, so insertion order is commit order
//     and the id is simply the seq, final at commit.
//
// A pass (PostgreSQL) is one statement: it records its batch (the first id
// and the seqs in order: one row, not a write per event), creates the
// batch's webhook deliveries, and tells every instance (notification
// "cmpay_sequenced") the new highest id. Passes never overlap and number
// ids without gaps, so the numbered events any reader sees always form a
// prefix of the ids: a reader that has seen N has seen everything up to N,
// `after` resumes without gaps or duplicates, and no id ever goes back
// (the sweep never deletes the newest pass, or on SQLite the newest event).
//
// # Fan-out
//
// Each instance keeps one hub. On PostgreSQL it listens for "sequenced"
// notifications on the sequencer's connection (reconnecting after a drop,
// and reading everything past the last id it saw, since notifications sent
// while disconnected are lost) and polls once a second besides; on SQLite
// the pass wakes it in-process. It reads the new events once and hands
// them to every local subscriber through a bounded buffer, never waiting:
// a subscriber whose buffer is full catches up from the outbox on its own,
// and one that falls more than MaxLag events behind is dropped (its
// subscription ends with ErrTooSlow and the client resumes with `after`).
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/payments"
)

// Event is one numbered event.
type Event struct {
	// ID is the event's public id: unique, increasing in commit order.
	ID   int64
	Type payments.EventType
	At   time.Time
	// IdempotencyKey is the key of the request that caused the event.
	IdempotencyKey string
	// Payment is the payment right after the event.
	Payment payments.Payment
	// Refund is a PAYMENT_REFUNDED event's refund; nil otherwise.
	Refund *payments.Refund
	// Following is how many events a Subscription sends right after this
	// one without waiting for any: the rest of the same read of the outbox
	// (a replay from `after`, a catch-up), or the live events already
	// waiting in the subscription's buffer. A receiver may take them at
	// once and read what they show together (graph's forward). Zero for the
	// last of a read and for a live event nothing waits behind.
	Following int
}

// Filter narrows a subscription; empty fields do not filter.
type Filter struct {
	ClientID  string
	PaymentID string
}

func (f Filter) match(e *Event) bool {
	return (f.ClientID == "" || f.ClientID == e.Payment.ClientID) && (f.PaymentID == "" || f.PaymentID == e.Payment.ID)
}

// ErrTooSlow ends a subscription whose reader fell more than MaxLag events
// behind. Resume with `after` set to the last id received.
var ErrTooSlow = errors.New("the subscriber fell behind and was dropped; subscribe again with `after` set to the last event id received")

// errBehind takes a subscriber whose buffer is full off the hub's list.
var errBehind = errors.New("behind")

// ErrClosed ends subscriptions when the server shuts down.
var ErrClosed = errors.New("the server is shutting down; subscribe again with `after` set to the last event id received")

// ParseID reads an event id as the API shows it.
func ParseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		// Not the value: error messages do not echo the request.
		return 0, afterError("after must be the id of an event this API returned")
	}
	return id, nil
}

func afterError(format string, args ...any) error {
	return &payments.InvalidInputError{Problems: []payments.Problem{{Field: "after", Message: fmt.Sprintf(format, args...)}}}
}

// Options tunes a Service. The zero value is usable.
type Options struct {
	// Retention is how long events are kept for `after` (and for their
	// webhook deliveries): at least the idempotency key TTL. Zero means 72h.
	Retention time.Duration
	// FailedKeep is how long after its last attempt a FAILED webhook
	// delivery is kept past Retention, with its attempts and the body it
	// sent, so that support can still resend it (WEBHOOK_FAILED_KEEP). Zero
	// means DefaultFailedKeep; less than Retention means Retention. A kept
	// delivery costs the sweep nothing until its keep is over (store.go's
	// sweepDeliveries), and keeps no event.
	FailedKeep time.Duration
	// SweepInterval is how often old events are deleted. Zero means
	// payments.DefaultSweepInterval, the server's other sweepers' interval.
	SweepInterval time.Duration
	// Buffer is how many live events wait for a subscriber before it is
	// taken off the live list and catches up from the outbox; MaxLag how
	// many events behind it may fall before it is dropped (ErrTooSlow).
	// Zero means 256 and 10,000.
	Buffer int
	MaxLag int
	// Poll is how often the hub looks for new events without being told
	// and the leader for events it was not told of. Zero means 1s.
	Poll time.Duration
	// ReplayRate is how many events per second the instance's
	// subscriptions may read back from the outbox in all (a replay from
	// `after`, or a catch-up after falling behind), ReplayPages how many
	// pages of it they may hold at once, and ReplayStall how long a
	// subscriber may take to accept one page before it is dropped with
	// ErrTooSlow. Zero means DefaultReplayRate, DefaultReplayPages and
	// DefaultReplayStall.
	ReplayRate  int
	ReplayPages int
	ReplayStall time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultFailedKeep is how long a FAILED delivery is kept after its last
// attempt when WEBHOOK_FAILED_KEEP is unset: a week, so that a resend
// after a weekend finds it.
const DefaultFailedKeep = 168 * time.Hour

// Service numbers events and fans them out, on one instance.
type Service struct {
	store store
	log   *slog.Logger
	clock func() time.Time

	retention, failedKeep, sweepEvery, poll time.Duration
	buffer, maxLag                          int

	// wake asks the SQLite sequencer for a pass.
	wake chan struct{}
	hub  *hub
	// replay paces the subscriptions' reads of the outbox.
	replay *replayBudget

	leader    atomic.Bool
	listeners struct {
		sync.Mutex
		fns []func()
	}
	// background runs Run between Start and Stop (background.go).
	background startstop.Base
}

// New returns a Service over db, whose schema must be migrated.
func New(db *gorm.DB, opts Options) (*Service, error) {
	st, err := newStore(db)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s := &Service{
		store: st, log: opts.Logger, clock: opts.Now,
		retention: opts.Retention, failedKeep: opts.FailedKeep, sweepEvery: opts.SweepInterval, poll: opts.Poll, buffer: opts.Buffer, maxLag: opts.MaxLag,
		wake: make(chan struct{}, 1),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.retention <= 0 {
		s.retention = 72 * time.Hour
	}
	if s.failedKeep <= 0 {
		s.failedKeep = DefaultFailedKeep
	}
	// A keep shorter than the retention would let the sweep delete the
	// event of a FAILED delivery that failed before bodies were stored
	// (its event made just before the retention's cutoff) while the
	// delivery stays: a resend would then find no event.
	s.failedKeep = max(s.failedKeep, s.retention)
	if s.sweepEvery <= 0 {
		s.sweepEvery = payments.DefaultSweepInterval
	}
	if s.poll <= 0 {
		s.poll = time.Second
	}
	if s.buffer <= 0 {
		s.buffer = 256
	}
	if s.maxLag <= 0 {
		s.maxLag = 10_000
	}
	s.replay = newReplayBudget(opts.ReplayRate, opts.ReplayPages, opts.ReplayStall)
	last, err := s.maxID(context.Background())
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s.hub = newHub(s, last)
	return s, nil
}

// now is the current time as stored: UTC, to the microsecond.
func (s *Service) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// Run numbers and fans out events until ctx ends; then every subscription
// ends with ErrClosed. It returns once everything it started has stopped.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.hub.run(ctx) })
	wg.Go(func() { s.runSweeper(ctx) })
	wg.Go(func() {
		s.store.sequence(ctx, sequencing{numbered: s.hub.announce, missed: s.hub.wakeUp, leading: s.leader.Store,
			wake: s.wake, poll: s.poll, now: s.now, log: s.log})
	})
	wg.Wait()
	s.hub.closeAll(ErrClosed)
}

// Wake tells the Service that a write committed on this instance: on
// SQLite it numbers the new events at once (PostgreSQL is told by the
// database itself). It never blocks.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// OnNew registers fn to be called, from the hub's goroutine, whenever new
// events have been numbered (by any instance): the webhook dispatcher
// wakes up on it, since their deliveries now exist. fn must not block.
func (s *Service) OnNew(fn func()) {
	s.listeners.Lock()
	defer s.listeners.Unlock()
	s.listeners.fns = append(s.listeners.fns, fn)
}

func (s *Service) tellListeners() {
	s.listeners.Lock()
	fns := s.listeners.fns
	s.listeners.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Leader reports whether this instance numbers events now (always true on
// SQLite once running).
func (s *Service) Leader() bool { return s.leader.Load() }

// Last is the highest event id this instance's hub has seen.
func (s *Service) Last() int64 { return s.hub.lastID() }

// Subscribers is how many subscriptions follow live events on this
// instance now: registered with its hub, not catching up from the outbox.
func (s *Service) Subscribers() int { return s.hub.size() }

// Replays is how many subscriptions read back from the outbox on this
// instance now: reading holds one of the replay slots (at most
// Options.ReplayPages), waiting waits for its client's share of them or
// for a free one.
func (s *Service) Replays() (reading, waiting int) {
	return len(s.replay.slots), int(s.replay.waiting.Load())
}
