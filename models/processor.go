package models

import "time"

// ProcessorOperation is one operation sent to the payment processor: a
// create, capture, cancel or refund, stored before the processor is asked
// (so that a crash after the call leaves work a worker can finish, and one
// before it leaves nothing sent), then settled by what the processor says.
// While its outcome is unknown it is work for whoever holds its lease: the
// request that stored it, a retry of it, or the recovery worker of any
// instance; the lease is what keeps two of them from asking at once.
type ProcessorOperation struct {
	ID        string  `gorm:"primaryKey;size:40"`
	PaymentID string  `gorm:"not null;size:40;index:idx_processor_operations_payment"`
	RefundID  *string `gorm:"size:40"`
	Operation string  `gorm:"not null;size:20"`
	Processor string  `gorm:"not null;size:16"`
	// Key is the idempotency key sent to the processor: a function of the
	// operation alone ("cmpay_" + ID), the same for every try, and so
	// unique as the ID is, without an index of its own. Recovery replaces
	// it, before sending, with "cmpay_" + ID + "_a2" (then _a3, ...) only
	// when the processor stores an error under it, or a refund's key is a
	// day old, and a read shows the operation not done
	// (payments/resend.go): still unique.
	Key string `gorm:"not null;size:255"`
	// AmountMinor and Currency are what the operation moves; Request the
	// rest of what it asks, as JSON (method, payment method token, capture).
	AmountMinor int64  `gorm:"not null"`
	Currency    string `gorm:"not null;size:3"`
	Request     string `gorm:"not null;default:'{}'"`
	// State is PENDING (stored, not answered), UNKNOWN (asked, no answer
	// that settles it), SUCCEEDED, DECLINED (a create the processor
	// refused), REFUSED (a capture, cancel or refund it refused) or FAILED
	// (a refund it failed); Code is the processor's code for the last three.
	State string  `gorm:"not null;size:16"`
	Code  *string `gorm:"size:100"`
	// Sends counts the writes sent to the processor for this operation.
	Sends int `gorm:"not null;default:0"`
	// LeaseOwner holds the operation until LeaseUntil; a lease past its
	// time is free, so a holder that died loses it.
	LeaseOwner *string `gorm:"size:40"`
	LeaseUntil *time.Time
	// NextTryAt is when an unsettled operation is next resolved; the
	// recovery worker finds the due ones through the partial index on it.
	NextTryAt time.Time `gorm:"not null;index:idx_processor_operations_due,where:settled_at IS NULL"`
	LastError *string   `gorm:"size:500"`
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false"`
	SettledAt *time.Time
	// KeySince is when recovery gave the operation its current Key
	// (payments/resend.go); NULL while it has its first, set at CreatedAt.
	// The processor remembers a key for a time counted from its first
	// send, so recovery counts a key's age from here. The partial index
	// holds the creates and refunds sent again under a new key whose late
	// checks (payments/latecheck.go: a first read, then a second a day
	// later) are not both done: none on the sandbox, which never sends
	// under a second key.
	KeySince *time.Time `gorm:"index:idx_processor_operations_late_reads,where:key_since IS NOT NULL AND late_rechecked_at IS NULL AND (operation = 'CREATE_PAYMENT' OR operation = 'REFUND_PAYMENT')"`
	// StoredAt is when recovery first saw the processor's stored error
	// under Key (a replayed 500); NULL until then, and again once Key
	// changes. No request under Key can have executed after it, which
	// bounds the list of payments a create is looked for in.
	StoredAt *time.Time
	// LastSendAt is when the operation was last about to be sent, under
	// any key, written by the statement that stores or leases it for that
	// send: a send is recorded (ProcessorCall) only once it returns, so a
	// holder that dies mid-send leaves this alone to say it may have run.
	// NULL on rows stored before it was kept: their recorded sends, else
	// CreatedAt, say when.
	LastSendAt *time.Time
	// LateCheckedAt is when the processor was read, once every earlier
	// key's request could no longer be completed late, for a second payment
	// or refund such a request made (payments/latecheck.go); NULL until
	// then, and on operations never sent under a new key, which are never
	// read so. LateRecheckedAt is when it was read the second and last
	// time, a day after the first, for what the processor's search showed
	// late. LateCheckLease is the claim of the instance reading it: no
	// other claims it before then.
	LateCheckedAt   *time.Time
	LateRecheckedAt *time.Time
	LateCheckLease  *time.Time
}

// ProcessorCall is one call made to the processor for an operation: a
// write, or a read made to resolve it. Rows are only ever inserted. A
// call the sandbox answered before it was stored has no row (and no
// operation): a create's is read from its payment (Payment.CreateForeseen),
// a capture's, cancel's or refund's from its APPLIED attempt
// (IdempotencyAttempt.RequestID), by the processor_calls_of statements.
type ProcessorCall struct {
	ID          int64  `gorm:"primaryKey;autoIncrement"`
	OperationID string `gorm:"not null;size:40"`
	PaymentID   string `gorm:"not null;size:40;index:idx_processor_calls_payment,priority:1"`
	Operation   string `gorm:"not null;size:20"`
	// ProcessorKey is the idempotency key the call carried (a read's: its
	// operation's).
	ProcessorKey string `gorm:"not null;size:255"`
	// Kind is WRITE or READ; Outcome SUCCEEDED, DECLINED, UNKNOWN or ERROR.
	Kind       string    `gorm:"not null;size:8"`
	Outcome    string    `gorm:"not null;size:16"`
	Code       *string   `gorm:"size:100"`
	At         time.Time `gorm:"not null;index:idx_processor_calls_payment,priority:2"`
	DurationMs int64     `gorm:"not null"`
	// RecordState is the state the processor's answer gave its record, in
	// its own words ("pending", "expired", "captured", "succeeded"): what
	// a READ found. NULL when the answer held no record, and on rows
	// stored before it was kept.
	RecordState *string `gorm:"size:20"`
	// CallID names a call the settle statement wrote: run again after its
	// answer was lost, it meets the call under this unique index and
	// writes no second one (payments/sql/settle_batch.sql). NULL for every
	// other call.
	CallID *string `gorm:"size:40;uniqueIndex:idx_processor_calls_call_id,where:call_id IS NOT NULL"`
}
