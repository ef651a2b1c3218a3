// Package payments is CMPay's domain: payments created, captured, canceled
// and refunded, each operation exactly once per idempotency key; the
// validation and normalisation of what clients send; exact money; and the
// reading and listing of payments, their refunds and their attempts. The
// GraphQL API, the REST endpoints and the admin UI all go through it.
//
// A newcomer reads engine.go (the one path every operation takes), then
// decide.go (where every outcome is decided), then the store of their
// database (store_postgres.go with sql/, or store_sqlite.go).
package payments

import (
	"fmt"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// DefaultKeyTTL is how long an idempotency key is remembered by default.
const DefaultKeyTTL = 24 * time.Hour

// Config tunes a Service. The zero value is usable.
type Config struct {
	// KeyTTL is how long a key is remembered; after it, a request with the
	// key is handled as new. Zero means DefaultKeyTTL.
	KeyTTL time.Duration
	// Now is the clock; tests inject one. Nil means time.Now.
	Now func() time.Time
	// OnAttempt, if set, is told of every settled request after its
	// transaction commits (metrics hook in here).
	OnAttempt func(op Operation, outcome Outcome, transport string)
	// Reads, if set, serves the reads that may be a few seconds stale: the
	// payments listing and the 24-hour overview (a streaming replica:
	// database.Replica). Nil reads them from the service's database.
	Reads Reads
	// Unavailable, if set, tells an error that means "the database cannot
	// be reached, retry" (database.IsUnavailable): a batch that fails so is
	// not re-run request by request.
	Unavailable func(error) bool
	// ClockOffset, if set, keeps the service's clock in step with the
	// database's (clock.go; database.ClockOffset): start ClockSync
	// before serving.
	ClockOffset ClockOffset
}

// Reads is where reads that tolerate a few seconds of lag go.
type Reads interface {
	// Read runs a read-only fn on the replica while it is fit, else, or
	// if the replica fails it, on the primary.
	Read(fn func(db *gorm.DB) error) error
	// Reader is the database to stream one long read from (an export),
	// which must not be run twice.
	Reader() *gorm.DB
}

// primaryReads reads from the service's own database.
type primaryReads struct{ db *gorm.DB }

func (p primaryReads) Read(fn func(*gorm.DB) error) error { return fn(p.db) }
func (p primaryReads) Reader() *gorm.DB                   { return p.db }

// Service creates, changes and reads payments in one database.
type Service struct {
	reads Reads
	store store
	// creates and changes gather requests into batch statements (batch.go),
	// and records the attempts the engine decides after them.
	creates batcher[*job]
	changes batcher[*job]
	records batcher[*recordJob]
	keyTTL  time.Duration
	clock   func() time.Time
	// offset is how far the database's clock was ahead of clock when last
	// measured (clock.go), in nanoseconds; zero without a ClockOffset.
	offset      atomic.Int64
	clockOffset ClockOffset
	onAttempt   func(Operation, Outcome, string)
}

// NewService returns a Service over db, whose schema must be migrated.
func NewService(db *gorm.DB, cfg Config) (*Service, error) {
	s := &Service{reads: cfg.Reads, keyTTL: cfg.KeyTTL, clock: cfg.Now, clockOffset: cfg.ClockOffset, onAttempt: cfg.OnAttempt}
	if s.reads == nil {
		s.reads = primaryReads{db}
	}
	if s.keyTTL <= 0 {
		s.keyTTL = DefaultKeyTTL
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.onAttempt == nil {
		s.onAttempt = func(Operation, Outcome, string) {}
	}
	store, err := newStore(db, s.keyTTL, s.now)
	if err != nil {
		return nil, fmt.Errorf("new payments service: %w", err)
	}
	s.store = store
	s.creates = batcher[*job]{exec: s.store.createBatch, order: byPayment, stallAfter: defaultStallAfter, final: cfg.Unavailable}
	s.changes = batcher[*job]{exec: s.store.changeBatch, order: byPayment, stallAfter: defaultStallAfter, final: cfg.Unavailable}
	s.records = batcher[*recordJob]{exec: s.store.recordBatch, order: byRecordPayment, stallAfter: defaultStallAfter, final: cfg.Unavailable}
	return s, nil
}

// now is the current time as stored: by the database's clock when the
// service keeps in step with it (clock.go), UTC, truncated to the
// microsecond PostgreSQL keeps, so that what a request returns equals what
// a later read finds.
func (s *Service) now() time.Time {
	return s.clock().Add(time.Duration(s.offset.Load())).UTC().Truncate(time.Microsecond)
}
