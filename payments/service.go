// Package payments is CMPay's domain: payments created, captured, canceled
// and refunded, each operation exactly once per idempotency key; the
// validation and normalisation of what clients send; exact money; and the
// reading and listing of payments, their refunds and their attempts. The
// GraphQL API, the REST endpoints and the admin UI all go through it.
//
// A newcomer reads engine.go (the one path every operation takes), then
// decide.go (where every outcome is decided), then the store of their
// database (store_postgres.go with sql/, or store_sqlite.go); then how
// money moves at a processor: operations.go, changes.go, recovery.go.
package payments

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
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

	// Processor moves the money (processor.ConfigFromEnv picks it). Nil
	// means the sandbox with the default configuration.
	Processor processor.Processor
	// Sandbox, when Processor is another, answers for the payments made
	// at the sandbox before (their changes, recovery and reads): made
	// from the same SANDBOX_* settings, so that an async Pix's create
	// sent again by recovery is answered pending, as its first send was.
	// Nil means the sandbox with the default configuration.
	Sandbox processor.Processor
	// ProcessorTimeout is the most one processor call may take
	// (PROCESSOR_TIMEOUT); past it the outcome is unknown. Zero means 10 s.
	ProcessorTimeout time.Duration
	// RecoveryAfter is how long an unknown outcome waits before recovery
	// resolves it (PROCESSOR_RECOVERY_AFTER). Zero means 30 s.
	RecoveryAfter time.Duration
	// SearchLag is how long the processor's search may take to show a new
	// payment (STRIPE_SEARCH_LAG; recovery.go, mayResend). Zero means
	// processor.DefaultStripeSearchLag.
	SearchLag time.Duration
	// OnProcessorCall, if set, is told of every processor call stored (as
	// processorCalls lists them): its operation, outcome and duration
	// (metrics hook in here).
	OnProcessorCall func(op Operation, outcome CallOutcome, took time.Duration)
	// OnOperationSettled, if set, is told of every processor operation
	// settled after it was stored unsettled; wasUnknown says an unknown
	// outcome was resolved (metrics; tests wait on it).
	OnOperationSettled func(op Operation, wasUnknown bool)
	// OnLeaseLate, if set, is told of every operation recovery left to a
	// later claim without asking, setting its lease having left too little
	// of ProcessorTimeout (recovery.go, leasedCall; metrics hook in here).
	OnLeaseLate func(op Operation)
	// OnDuplicate, if set, is told of every duplicate the processor holds
	// the first time it is recorded (duplicates.go; metrics hook in here).
	OnDuplicate func(op Operation)
	// Logger is told of the processor calls that failed and of what
	// recovery settles or gives up on, sampled (calllog.go). Nil means
	// slog.Default().
	Logger *slog.Logger
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
	// settles gathers the answers of creates asked at the processor into
	// settle statements (settle.go); nil where the store has none.
	settles *batcher[*settleJob]
	keyTTL  time.Duration
	clock   func() time.Time
	// offset is how far the database's clock was ahead of clock when last
	// measured (clock.go), in nanoseconds; zero without a ClockOffset.
	offset      atomic.Int64
	clockOffset ClockOffset
	onAttempt   func(Operation, Outcome, string)

	// proc moves the money (operations.go); timeout, recoveryAfter and
	// searchLag are PROCESSOR_TIMEOUT, PROCESSOR_RECOVERY_AFTER and
	// STRIPE_SEARCH_LAG; instance names this Service as the owner of the
	// operations it leases.
	proc          processor.Processor
	procs         map[string]processor.Processor
	timeout       time.Duration
	recoveryAfter time.Duration
	searchLag     time.Duration
	instance      string
	onCall        func(Operation, CallOutcome, time.Duration)
	onSettled     func(Operation, bool)
	onLeaseLate   func(Operation)
	onDuplicate   func(Operation)
	// log is told of what must not go unseen (a duplicate at the
	// processor, duplicates.go), unsampled.
	log *slog.Logger
	// calls samples the log lines of processor calls and of recovery
	// (calllog.go); RecoverDue logs its counts every round.
	calls *logrepeat.Sampler
	// walks are the lists of created payments read so far, to go on from
	// (listwalk.go).
	walks listWalks
	// leaseSet, when set (by tests), is called as recovery's statement
	// that sets a lease (renew_lease, rekey_operation) returns, before
	// anything is asked under it.
	leaseSet func()
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
	s.proc, s.timeout, s.recoveryAfter = cfg.Processor, cfg.ProcessorTimeout, cfg.RecoveryAfter
	s.onCall, s.onSettled, s.onLeaseLate = cfg.OnProcessorCall, cfg.OnOperationSettled, cfg.OnLeaseLate
	defaults := processor.DefaultConfig()
	if s.timeout <= 0 {
		s.timeout = defaults.Timeout
	}
	if s.recoveryAfter <= 0 {
		s.recoveryAfter = defaults.RecoveryAfter
	}
	if s.searchLag = cfg.SearchLag; s.searchLag <= 0 {
		s.searchLag = processor.DefaultStripeSearchLag
	}
	defaults.Timeout = s.timeout
	if s.proc == nil {
		s.proc = sandbox.New(defaults)
	}
	// A payment's changes, recovery and reads go to the processor that
	// made it, which may not be the one new payments go to: the sandbox
	// keeps nothing and needs no network, so its payments stay reachable
	// after a switch to Stripe.
	s.procs = map[string]processor.Processor{s.proc.Name(): s.proc}
	if _, ok := s.procs[processor.NameSandbox]; !ok {
		sb := cfg.Sandbox
		if sb == nil {
			sb = sandbox.New(defaults)
		}
		s.procs[processor.NameSandbox] = sb
	}
	if s.onCall == nil {
		s.onCall = func(Operation, CallOutcome, time.Duration) {}
	}
	if s.onSettled == nil {
		s.onSettled = func(Operation, bool) {}
	}
	if s.onLeaseLate == nil {
		s.onLeaseLate = func(Operation) {}
	}
	if s.onDuplicate = cfg.OnDuplicate; s.onDuplicate == nil {
		s.onDuplicate = func(Operation) {}
	}
	s.log = cmp.Or(cfg.Logger, slog.Default())
	s.calls = &logrepeat.Sampler{Logger: s.log, Now: s.clock}
	s.instance = "svc_" + ulid.Make().String()
	store, err := newStore(db, s.keyTTL, s.now)
	if err != nil {
		return nil, fmt.Errorf("new payments service: %w", err)
	}
	s.store = store
	// SQLite has one writer: its batchers run one statement at a time
	// (batch.go).
	most := maxInFlight
	if _, lite := s.store.(*sqliteStore); lite {
		most = 1
	}
	s.creates = batcher[*job]{exec: s.store.createBatch, order: byPayment, stallAfter: defaultStallAfter, most: most, final: cfg.Unavailable}
	s.changes = batcher[*job]{exec: s.store.changeBatch, order: byPayment, stallAfter: defaultStallAfter, most: most, final: cfg.Unavailable}
	s.records = batcher[*recordJob]{exec: s.store.recordBatch, order: byRecordPayment, stallAfter: defaultStallAfter, most: most, final: cfg.Unavailable}
	if cs, ok := s.store.(createSettler); ok {
		s.settles = &batcher[*settleJob]{exec: cs.settleCreates, order: byOperation, stallAfter: defaultStallAfter, most: most, final: cfg.Unavailable}
	}
	return s, nil
}

// now is the current time as stored: by the database's clock when the
// service keeps in step with it (clock.go), UTC, truncated to the
// microsecond PostgreSQL keeps, so that what a request returns equals what
// a later read finds.
func (s *Service) now() time.Time {
	return s.clock().Add(time.Duration(s.offset.Load())).UTC().Truncate(time.Microsecond)
}

// processorNamed is the processor called name: the one a payment was made
// at, which its changes, recovery and reads go to. One this server is not
// configured for answers every call with a ProcessorUnavailableError, an
// unknown outcome, so that its operations wait for an instance that is
// (claim_due and pending_due pass them over besides).
func (s *Service) processorNamed(name string) processor.Processor {
	if proc, ok := s.procs[name]; ok {
		return proc
	}
	return unavailable{name}
}

// reachable says whether this server can call the processor called name.
func (s *Service) reachable(name string) bool {
	_, ok := s.procs[name]
	return ok
}

// processorNames are the processors this server can call, for the
// statements that pick work by processor: two, repeated if need be.
func (s *Service) processorNames() [2]string {
	return [2]string{s.proc.Name(), processor.NameSandbox}
}

// unavailable is a processor this server is not configured for.
type unavailable struct{ name string }

func (u unavailable) err() error   { return &ProcessorUnavailableError{Processor: u.name} }
func (u unavailable) Name() string { return u.name }
func (u unavailable) CreatePayment(context.Context, processor.CreatePaymentRequest) (processor.Payment, error) {
	return processor.Payment{}, u.err()
}
func (u unavailable) CapturePayment(context.Context, processor.CaptureRequest) (processor.Payment, error) {
	return processor.Payment{}, u.err()
}
func (u unavailable) CancelPayment(context.Context, processor.CancelRequest) (processor.Payment, error) {
	return processor.Payment{}, u.err()
}
func (u unavailable) RefundPayment(context.Context, processor.RefundRequest) (processor.Refund, error) {
	return processor.Refund{}, u.err()
}
func (u unavailable) GetPayment(context.Context, string) (processor.Payment, error) {
	return processor.Payment{}, u.err()
}
func (u unavailable) FindPayments(context.Context, string) ([]processor.Payment, error) {
	return nil, u.err()
}
func (u unavailable) GetRefund(context.Context, string) (processor.Refund, error) {
	return processor.Refund{}, u.err()
}
func (u unavailable) ListRefunds(context.Context, string) ([]processor.Refund, error) {
	return nil, u.err()
}
