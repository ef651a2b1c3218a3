// Package models holds the GORM models: the tables CMPay stores and the
// indexes and constraints that make its promises hold. The idempotency
// guarantee lives here: the composite unique index on (client_id,
// idempotency_key) of IdempotencyKey decides which of several simultaneous
// requests with one key is applied, for every operation, on every server
// instance at once; the check constraint on Payment keeps refunds from ever
// adding up to more than was captured.
package models

import "time"

// Payment is one payment, created by the first request made with its
// idempotency key, then captured, canceled or refunded by later requests
// with keys of their own.
//
// Listings are newest first by (created_at, id). Each index below serves one
// filter of a listing in that order, ending in id, so that a page is an
// index range read with no sort and no full scan, however many payments
// there are: all, by client, by key, by status, flagged, replayed, rejected.
//
// AutoMigrate creates an index whose name is missing and leaves an existing
// one alone: to change an index's columns, give it a new name.
type Payment struct {
	ID string `gorm:"primaryKey;size:40;index:idx_payments_created,priority:2;index:idx_payments_client_created,priority:3;index:idx_payments_key_created,priority:3;index:idx_payments_status_created,priority:3;index:idx_payments_flagged_at,priority:2,where:replayed_at IS NOT NULL OR rejected_at IS NOT NULL;index:idx_payments_replayed_at,priority:2,where:replayed_at IS NOT NULL;index:idx_payments_rejected_at,priority:2,where:rejected_at IS NOT NULL;index:idx_payments_waiting_op,priority:2,where:pending_operation IS NOT NULL OR reserved_minor > 0"`

	ClientID       string `gorm:"not null;size:100;index:idx_payments_client_created,priority:1"`
	IdempotencyKey string `gorm:"not null;size:100;index:idx_payments_key_created,priority:1"`

	// AmountMinor is the amount asked for at creation (authorized), in the
	// currency's minor units (cents for BRL, yen for JPY): an exact
	// integer, never a float.
	AmountMinor int64  `gorm:"not null"`
	Currency    string `gorm:"not null;size:3"`
	Method      string `gorm:"not null;size:16"`

	CreatedAt time.Time `gorm:"not null;autoCreateTime:false;index:idx_payments_created,priority:1;index:idx_payments_client_created,priority:2;index:idx_payments_key_created,priority:2;index:idx_payments_status_created,priority:2;index:idx_payments_flagged_at,priority:1;index:idx_payments_replayed_at,priority:1;index:idx_payments_rejected_at,priority:1;index:idx_payments_waiting_op,priority:1"`

	// Status is AUTHORIZED, CAPTURED, PARTIALLY_REFUNDED, REFUNDED or
	// CANCELED. Rows stored before the lifecycle existed were all captured.
	Status string `gorm:"not null;size:20;default:CAPTURED;index:idx_payments_status_created,priority:1"`
	// CapturedMinor is what was captured (0 while authorized or canceled);
	// RefundedMinor the sum of the payment's refunds. The check constraint
	// is the last line of defence behind the conditional updates that
	// change them: whatever runs concurrently, no row can ever say that
	// more was refunded than captured, or captured than authorized.
	CapturedMinor int64 `gorm:"not null;default:0;check:chk_payments_amounts,refunded_minor >= 0 AND refunded_minor <= captured_minor AND captured_minor <= amount_minor"`
	RefundedMinor int64 `gorm:"not null;default:0"`
	CapturedAt    *time.Time
	CanceledAt    *time.Time

	// ReplayCount and RejectedCount count the requests, of any operation,
	// that replayed a key of this payment or reused one for another payload.
	ReplayCount   int `gorm:"not null;default:0"`
	RejectedCount int `gorm:"not null;default:0"`

	// ReplayedAt and RejectedAt are set by the first replay and the first
	// rejection, and never change after. The partial indexes for "flagged",
	// "replayed" and "rejected" are defined on them, not on the counters,
	// so that later replays change no indexed column: PostgreSQL then
	// updates the row in place (a HOT update) without touching any index.
	// Only whether they are set is read (the listing's filters); when a
	// replay or rejection happened is its attempt's time.
	ReplayedAt *time.Time
	RejectedAt *time.Time

	// Processor is the processor that moves the payment's money ("sandbox"
	// or "stripe"; every payment stored before processors: "sandbox"), and
	// ProcessorReference its id there once known, indexed for the payments
	// of a processor other than the sandbox: the processor's events name a
	// payment by it, and support staff search by it. The sandbox's payments,
	// the embedded default's every create, are left out of the index so
	// that a create pays no entry in it (5 % of PostgreSQL's time per create).
	Processor          string  `gorm:"not null;size:16;default:sandbox"`
	ProcessorReference *string `gorm:"size:255;index:idx_payments_external_reference,where:processor <> 'sandbox'"`
	// DeclineCode is a DECLINED payment's processor code.
	DeclineCode *string `gorm:"size:100"`
	// PendingOperation is the capture or cancel sent to the processor whose
	// outcome is not known yet (the payment keeps its status meanwhile).
	PendingOperation *string `gorm:"size:20"`
	// ReservedMinor is what refunds still PROCESSING hold: a refund's
	// amount counts against what is left to refund from the moment it is
	// stored, before the processor is asked.
	ReservedMinor int64 `gorm:"not null;default:0"`
	// PaymentMethodToken is the paymentMethodToken the create sent (the
	// payment method at the processor), nil for none.
	PaymentMethodToken *string `gorm:"size:255"`
	// CreateForeseen marks a payment whose create the processor answered
	// before it was stored, for good (the sandbox's card payments): its
	// create has no ProcessorOperation row, and its one call is read from
	// the payment itself (the processor_calls_of statements), which spares
	// every such create a row and two index entries.
	CreateForeseen bool `gorm:"not null;default:false"`
	// The next action of a Pix or boleto payment: what the payer does, and
	// until when.
	NextActionType      *string `gorm:"size:16"`
	PixCode             *string `gorm:"size:1000"`
	BoletoLine          *string `gorm:"size:64"`
	HostedURL           *string `gorm:"size:2000"`
	NextActionExpiresAt *time.Time
	// PaidAt is when the payer paid a Pix or boleto payment; ExpiredAt when
	// it expired unpaid.
	PaidAt    *time.Time
	ExpiredAt *time.Time
	// ProcessorUpdatedAt is the processor's own time of the newest state of
	// the payment CMPay applied: an event older than it changes nothing.
	ProcessorUpdatedAt *time.Time
	// AuthCheckedAt schedules the read of an AUTHORIZED payment at its
	// processor, which may cancel or capture it by itself
	// (payments/authcheck.go): the next read is due a fixed interval after
	// it, or after CreatedAt while it is nil (a claim sets it so that the
	// payment is due again minutes later, should its read fail). Its
	// partial index, on the time the interval counts from, lets each round
	// take the longest due authorizations without reading the others (the
	// reads, 8 a round, still top out near 230,000 a day per instance).
	AuthCheckedAt *time.Time `gorm:"index:idx_payments_auth_check,expression:COALESCE(auth_checked_at\\, created_at),where:status = 'AUTHORIZED' AND processor <> 'sandbox'"`
}

// Refund is money given back from a captured payment. A payment has any
// number of them; their sum is the payment's RefundedMinor.
type Refund struct {
	ID             string    `gorm:"primaryKey;size:40"`
	PaymentID      string    `gorm:"not null;size:40;index:idx_refunds_payment,priority:1"`
	AmountMinor    int64     `gorm:"not null;check:chk_refunds_amount,amount_minor > 0"`
	Reason         *string   `gorm:"size:500"`
	IdempotencyKey string    `gorm:"not null;size:100"`
	CreatedAt      time.Time `gorm:"not null;autoCreateTime:false;index:idx_refunds_payment,priority:2"`

	// Status is PROCESSING until the processor says the refund SUCCEEDED or
	// FAILED (every refund stored before processors succeeded);
	// FailureCode is a failed refund's processor code.
	Status             string  `gorm:"not null;size:16;default:SUCCEEDED"`
	FailureCode        *string `gorm:"size:100"`
	ProcessorReference *string `gorm:"size:255"`
	SettledAt          *time.Time
	// ReturnedAt is when a refund that had SUCCEEDED was FAILED by its
	// processor: the payer's bank sent it back (payments/learned.go).
	ReturnedAt *time.Time
}

// IdempotencyKey remembers, for as long as the key's TTL, what a client's
// key was used for: the operation, its parameters, and what it produced.
// One table for every operation, so a key is unique per client whatever it
// was used for. Rows are deleted when the key expires; what they produced
// stays.
type IdempotencyKey struct {
	ID int64 `gorm:"primaryKey;autoIncrement"`

	// The composite unique index: a key belongs to one client.
	ClientID string `gorm:"not null;size:100;uniqueIndex:idx_idempotency_keys_client_key,priority:1"`
	Key      string `gorm:"column:idempotency_key;not null;size:100;uniqueIndex:idx_idempotency_keys_client_key,priority:2"`

	// Operation is CREATE_PAYMENT, CAPTURE_PAYMENT, CANCEL_PAYMENT or
	// REFUND_PAYMENT; keys stored before the lifecycle existed were creates.
	Operation string `gorm:"not null;size:20;default:CREATE_PAYMENT"`

	// Fingerprint is the SHA-256 of the request's canonical encoding, whose
	// version is FingerprintVersion; Params is that canonical encoding's
	// parameters as JSON, kept so that a refusal can name the fields that
	// differ. Version 1 keys (before the lifecycle) have no Params: their
	// payment holds them.
	Fingerprint        []byte `gorm:"not null"`
	FingerprintVersion int    `gorm:"not null"`
	Params             *string

	// PaymentID is the payment the key created or changed; RefundID the
	// refund a refund key created.
	PaymentID string  `gorm:"not null;size:40"`
	RefundID  *string `gorm:"size:40"`
	// ProcessorOperationID is the processor operation a capture, cancel or
	// refund key started: a replay answers as that operation stands
	// (pending, applied, or refused by the processor). A change the sandbox
	// foresaw has no operation row, only its call (read from its APPLIED
	// attempt), whose operation id this is: it tells the request's own
	// statement, run again, from a retry.
	ProcessorOperationID *string `gorm:"size:40"`

	// CreatedAt is when the key was first used; it expires TTL later.
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false;index:idx_idempotency_keys_created"`
}

// IdempotencyAttempt is one request made against a payment, whatever its
// operation and key: the one that created it, every capture, cancel and
// refund, and every replay, rejection and refusal. Rows are only ever
// inserted, but for one change: a capture, cancel or refund asked at a
// processor is APPLIED until the processor refuses it (or fails the
// refund), when it becomes REFUSED (migration 0010 lets the admin's
// attempts take that change alone). Together they are the payment's
// history, and for actions taken in the admin UI, part of the audit log.
type IdempotencyAttempt struct {
	ID        int64     `gorm:"primaryKey;autoIncrement"`
	PaymentID string    `gorm:"not null;size:40;index:idx_idempotency_attempts_payment,priority:1"`
	Operation string    `gorm:"not null;size:20;default:CREATE_PAYMENT"`
	Outcome   string    `gorm:"not null;size:16"`
	At        time.Time `gorm:"not null;index:idx_idempotency_attempts_payment,priority:2;index:idx_idempotency_attempts_at"`

	// IdempotencyKey is the key the request carried.
	IdempotencyKey string `gorm:"not null;size:100;default:''"`

	// Params is the request's canonical parameters (JSON), and HeldParams,
	// for a REJECTED attempt, those of the request that first used the key:
	// the fields that differ are computed from the two.
	Params     *string
	HeldParams *string

	// Refusal is, for a REFUSED attempt, the rule that refused it
	// (PAYMENT_STATE_CONFLICT or AMOUNT_EXCEEDS_AVAILABLE), or
	// PROCESSOR_REFUSED when the processor did.
	Refusal string `gorm:"not null;size:32;default:''"`
	// RefundID is the refund an APPLIED or REPLAYED refund request got.
	RefundID *string `gorm:"size:40"`

	// DifferingFields and the Attempted* columns are how version 1 stored a
	// rejection; later rejections keep Params and HeldParams instead.
	DifferingFields      string `gorm:"not null;default:''"`
	AttemptedAmountMinor *int64
	AttemptedCurrency    *string `gorm:"size:3"`
	AttemptedMethod      *string `gorm:"size:16"`

	// Transport says which API the attempt came through (graphql, rest,
	// admin); Actor and ActorAddress, for the admin, which staff member
	// made it and from where.
	Transport    string `gorm:"not null;size:16;default:''"`
	Actor        string `gorm:"not null;size:100;default:''"`
	ActorAddress string `gorm:"not null;size:64;default:''"`

	// RequestID names the request a REPLAYED, REJECTED or REFUSED attempt
	// records (the id made for what it would create, or for its processor
	// operation): a statement run again after it committed without
	// answering looks for it among the payment's attempts and neither
	// records nor counts the request twice. A capture, cancel or refund
	// asked at a processor (not foreseen) names its processor operation,
	// so that the operation's settlement finds it; one the sandbox foresaw
	// names the operation of its one call, which has no row of its own
	// (ProcessorCall) and is read from this attempt. NULL for CREATED
	// attempts, which their key guards, and for attempts stored before it
	// existed (a foreseen change's call kept a row then). No index of its
	// own: only a request sent again, and the calls' reader, look, through
	// the payment's.
	RequestID *string `gorm:"size:40"`
}

// Currency is an ISO 4217 currency and its minor-unit digits, written at
// every start from the list the Go code uses: what lets a statement turn a
// refund's decimal amount into the payment's minor units, with no float and
// no second round trip to ask the payment's currency first.
type Currency struct {
	Code   string `gorm:"primaryKey;size:3"`
	Digits int    `gorm:"not null"`
}

// SchemaVersion records the numbered migrations that have run
// (database/migrations, run by database.Migrate): each runs once, in
// order, on every database; the highest is the schema's version.
type SchemaVersion struct {
	Version   int       `gorm:"primaryKey;autoIncrement:false"`
	AppliedAt time.Time `gorm:"not null"`
}

// All lists every model, in migration order.
func All() []any {
	return []any{&Payment{}, &Refund{}, &IdempotencyKey{}, &IdempotencyAttempt{}, &Currency{}, &SchemaVersion{}, &APIToken{}, &StaffAccount{}, &StaffSession{}, &StaffAuditEntry{},
		&PaymentEvent{}, &EventCursor{}, &WebhookEndpoint{}, &WebhookDelivery{}, &WebhookAttempt{},
		&ProcessorOperation{}, &ProcessorCall{}, &ProcessorEvent{}, &ProcessorDuplicate{}}
}
