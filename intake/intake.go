// Package intake takes in the events a processor posts (Stripe's webhook
// to POST /processor/stripe/events): it verifies each, stores it once by its
// id however often it comes, and hands it to the payments engine to apply.
//
// Events are not needed for correctness (the engine reads a payment from
// the processor when one is late), but they make CMPay learn at once that a
// Pix or boleto was paid. They come repeated, late, out of order, and even
// before CMPay has recorded the processor's answer that names the payment:
// an event the engine cannot apply yet stays stored unapplied and is tried
// again (Retry), and the engine applies the processor's state, not the
// event's story, so order does not matter.
package intake

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/processor"
)

// Applier applies an event to the payment it names: the consumer's view of
// the payments engine. An error wrapping ErrNotYet leaves the event to be
// tried again; any other error too, but it is also worth logging.
type Applier interface {
	ApplyProcessorEvent(ctx context.Context, ev processor.Event) error
}

// ErrNotYet is what an Applier wraps when the event names a payment CMPay
// has not recorded yet: the event is kept and tried again.
var ErrNotYet = errors.New("the event's payment is not known yet")

// ErrRefused wraps every reason a posted event is refused (a signature
// that does not verify, a timestamp too far from now, a malformed body):
// the HTTP layer answers 400, and nothing is stored.
var ErrRefused = errors.New("event refused")

// Options configure a Service.
type Options struct {
	// Processor names the processor the events come from ("stripe").
	Processor string
	// Verify checks a posted body against its signature header and
	// decodes it (for Stripe: stripe.VerifyEvent with the whsec_ secret).
	Verify func(payload []byte, signature string, now time.Time) (processor.Event, error)
	// Decode decodes a stored, already verified body (stripe.DecodeEvent).
	Decode func(payload []byte) (processor.Event, error)
	// Apply applies events; nil stores them only.
	Apply Applier
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ApplyWithin bounds the apply that Receive does before it answers
	// (default 2 s): the processor is answered once the event is stored,
	// and an apply that takes longer is finished by Retry.
	ApplyWithin time.Duration
	// RetryFor is how long after its receipt an unapplied event is tried
	// again (default 24 h); by then the poller has read its payment.
	RetryFor time.Duration
}

// Service takes in one processor's events.
type Service struct {
	opts Options
	db   sqlq.DB

	// mu guards cursor, where Retry's walk over the unapplied events goes
	// on from: nil to start from the newest.
	mu     sync.Mutex
	cursor *retryCursor
}

// retryCursor is the last event of the page Retry took before: the next
// page is of those older than it.
type retryCursor struct {
	receivedAt time.Time
	id         string
}

// storedEvent is an unapplied event as Retry reads it.
type storedEvent struct {
	retryCursor
	payload string
}

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the package's SQL, which both dialects run as written.
var statements = sqlq.MustLoad(sqlFiles, "sql/common.sql")

// New returns a Service storing events in db.
func New(db *gorm.DB, opts Options) (*Service, error) {
	if opts.Verify == nil || opts.Decode == nil || opts.Processor == "" {
		return nil, errors.New("intake: Processor, Verify and Decode are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ApplyWithin <= 0 {
		opts.ApplyWithin = 2 * time.Second
	}
	if opts.RetryFor <= 0 {
		opts.RetryFor = 24 * time.Hour
	}
	run, err := sqlq.Pick(db, func(pg *sqlq.PG) sqlq.DB { return pg }, func(lite *sqlq.Lite) sqlq.DB { return lite })
	if err != nil {
		return nil, fmt.Errorf("intake: %w", err)
	}
	return &Service{opts: opts, db: run}, nil
}

// Receive verifies a posted event, stores it unless it is stored already,
// and applies it unless it is applied already. It returns nil once the
// event is stored, whether or not it could be applied yet: the processor
// then stops sending it, and Retry applies it later. A refused event is an
// error wrapping ErrRefused and changes nothing.
func (s *Service) Receive(ctx context.Context, payload []byte, signature string) (processor.Event, error) {
	now := s.opts.Now().UTC()
	ev, err := s.opts.Verify(payload, signature, now)
	if err != nil {
		return processor.Event{}, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if ev.ID == "" {
		return processor.Event{}, fmt.Errorf("%w: the event has no id", ErrRefused)
	}
	if !storable.Time(ev.Created) {
		// Whatever the processor's decoder let through: PostgreSQL would
		// refuse the time with an error, and SQLite order it as text.
		return processor.Event{}, fmt.Errorf("%w: created %s is outside years 1 to 9999", ErrRefused, ev.Created.UTC())
	}
	stored, err := s.db.Exec(ctx, statements.SQL("insert_event"), ev.ID, s.opts.Processor, ev.Type, ev.PaymentReference,
		ev.Created.UTC(), now, string(payload))
	if err != nil {
		return processor.Event{}, fmt.Errorf("store event %s: %w", ev.ID, err)
	}
	// An event stored just now is not applied yet; only a repeat delivery
	// needs to read whether an earlier one was: one statement less on the
	// path every new event takes.
	applied := false
	if stored == 0 {
		if err := s.db.QueryRow(ctx, statements.SQL("event_applied"), ev.ID).Scan(&applied); err != nil {
			return processor.Event{}, fmt.Errorf("read event %s: %w", ev.ID, err)
		}
	}
	if !applied {
		// Not applied now is not a failure of the delivery: it is stored,
		// and Retry finishes what does not fit in ApplyWithin.
		applyCtx, cancel := context.WithTimeout(ctx, s.opts.ApplyWithin)
		defer cancel()
		_ = s.apply(applyCtx, ev)
	}
	return ev, nil
}

// apply hands ev to the Applier and stamps it applied when that succeeds.
func (s *Service) apply(ctx context.Context, ev processor.Event) error {
	if s.opts.Apply == nil {
		return nil
	}
	if err := s.opts.Apply.ApplyProcessorEvent(ctx, ev); err != nil {
		return fmt.Errorf("apply event %s: %w", ev.ID, err)
	}
	if _, err := s.db.Exec(ctx, statements.SQL("mark_applied"), ev.ID, s.opts.Now().UTC()); err != nil {
		return fmt.Errorf("mark event %s applied: %w", ev.ID, err)
	}
	return nil
}

// Retry applies up to limit stored events that are not applied yet,
// received within RetryFor, and returns how many it applied. Each call
// takes the page after the one the call before took, newest to oldest,
// and starts again from the newest after a short page, so that every
// unapplied event in the window gets its turn however many wait on
// payments that stay unresolved. An event that still cannot be applied
// stays for a later call. The error joins what went wrong other than an
// event's payment not being ready (ErrNotYet): a stored event that no
// longer decodes, a database error.
func (s *Service) Retry(ctx context.Context, limit int) (int, error) {
	page, err := s.unappliedPage(ctx, limit)
	if err != nil {
		return 0, err
	}
	applied := 0
	var errs []error
	for _, e := range page {
		ev, err := s.opts.Decode([]byte(e.payload))
		if err != nil {
			errs = append(errs, fmt.Errorf("decode stored event %s: %w", e.id, err))
			continue
		}
		switch err := s.apply(ctx, ev); {
		case err == nil:
			applied++
		case !errors.Is(err, ErrNotYet):
			errs = append(errs, err)
		}
	}
	return applied, errors.Join(errs...)
}

// unappliedPage reads Retry's next page of up to limit unapplied events and
// moves the cursor past it: back to the newest after a short page.
func (s *Service) unappliedPage(ctx context.Context, limit int) ([]storedEvent, error) {
	since := s.opts.Now().UTC().Add(-s.opts.RetryFor)
	s.mu.Lock()
	at := s.cursor
	s.mu.Unlock()
	stmt, args := statements.SQL("unapplied"), []any{limit, since}
	if at != nil {
		stmt, args = statements.SQL("unapplied_after"), []any{limit, since, at.receivedAt, at.id}
	}
	page, err := sqlq.Collect(ctx, s.db, stmt, args, func(r sqlq.Row) (storedEvent, error) {
		var e storedEvent
		return e, r.Scan(&e.receivedAt, &e.id, &e.payload)
	})
	if err != nil {
		return nil, fmt.Errorf("read unapplied events: %w", err)
	}
	var next *retryCursor
	if len(page) == limit && limit > 0 {
		last := page[len(page)-1].retryCursor
		last.receivedAt = last.receivedAt.UTC()
		next = &last
	}
	s.mu.Lock()
	s.cursor = next
	s.mu.Unlock()
	return page, nil
}

// Received is one event as the admin lists it.
type Received struct {
	ID, Type   string
	Created    time.Time
	ReceivedAt time.Time
	// AppliedAt is unset while the event waits for its payment.
	AppliedAt *time.Time
}

// EventsOf lists the events received for the payment the processor knows
// as reference, in the processor's order.
func (s *Service) EventsOf(ctx context.Context, reference string) ([]Received, error) {
	out, err := sqlq.Collect(ctx, s.db, statements.SQL("events_of"), []any{reference}, func(r sqlq.Row) (Received, error) {
		var e Received
		err := r.Scan(&e.ID, &e.Type, &e.Created, &e.ReceivedAt, &e.AppliedAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", reference, err)
	}
	return out, nil
}
