// Package models holds the GORM models: the tables CMPay stores and the
// indexes that make its promises hold. The idempotency guarantee lives here:
// the composite unique index on (client_id, idempotency_key) of
// IdempotencyKey decides which of several simultaneous requests creates a
// payment, on every server instance at once.
package models

import "time"

// Payment is one payment, created by the first request made with its
// idempotency key. It is never updated except for the attempt counters.
//
// Listings are newest first by (created_at, id). Each index below serves one
// filter of a listing in that order, ending in id, so that a page is an
// index range read with no sort and no full scan, however many payments
// there are: all, by client, by key, flagged, replayed, rejected.
//
// AutoMigrate creates an index whose name is missing and leaves an existing
// one alone: to change an index's columns, give it a new name.
type Payment struct {
	ID string `gorm:"primaryKey;size:40;index:idx_payments_created,priority:2;index:idx_payments_client_created,priority:3;index:idx_payments_key_created,priority:3;index:idx_payments_flagged_at,priority:2,where:replayed_at IS NOT NULL OR rejected_at IS NOT NULL;index:idx_payments_replayed_at,priority:2,where:replayed_at IS NOT NULL;index:idx_payments_rejected_at,priority:2,where:rejected_at IS NOT NULL"`

	ClientID       string `gorm:"not null;size:100;index:idx_payments_client_created,priority:1"`
	IdempotencyKey string `gorm:"not null;size:100;index:idx_payments_key_created,priority:1"`

	// AmountMinor is the amount in the currency's minor units (cents for
	// BRL, yen for JPY): an exact integer, never a float.
	AmountMinor int64  `gorm:"not null"`
	Currency    string `gorm:"not null;size:3"`
	Method      string `gorm:"not null;size:16"`

	CreatedAt time.Time `gorm:"not null;autoCreateTime:false;index:idx_payments_created,priority:1;index:idx_payments_client_created,priority:2;index:idx_payments_key_created,priority:2;index:idx_payments_flagged_at,priority:1;index:idx_payments_replayed_at,priority:1;index:idx_payments_rejected_at,priority:1"`

	// ReplayCount and RejectedCount count the attempts with this payment's
	// key after the one that created it.
	ReplayCount   int `gorm:"not null;default:0"`
	RejectedCount int `gorm:"not null;default:0"`

	// ReplayedAt and RejectedAt are set by the first replay and the first
	// rejection, and never change after. The partial indexes for "flagged",
	// "replayed" and "rejected" are defined on them, not on the counters,
	// so that later replays change no indexed column: PostgreSQL then
	// updates the row in place (a HOT update) without touching any index.
	ReplayedAt *time.Time
	RejectedAt *time.Time
}

// ObsoleteIndexes are indexes earlier versions created and this one drops:
// partial indexes on the counters, which made every replay rewrite all of
// the table's indexes.
var ObsoleteIndexes = []string{
	"idx_payments_flagged_created",
	"idx_payments_replayed_created",
	"idx_payments_rejected_created",
}

// IdempotencyKey remembers, for as long as the key's TTL, which payment a
// client's key created and the fingerprint of the payload it was created
// with. Rows are deleted when the key expires; the payment stays.
type IdempotencyKey struct {
	ID int64 `gorm:"primaryKey;autoIncrement"`

	// The composite unique index: a key belongs to one client.
	ClientID string `gorm:"not null;size:100;uniqueIndex:idx_idempotency_keys_client_key,priority:1"`
	Key      string `gorm:"column:idempotency_key;not null;size:100;uniqueIndex:idx_idempotency_keys_client_key,priority:2"`

	// Fingerprint is the SHA-256 of the payload's canonical encoding, whose
	// version is FingerprintVersion.
	Fingerprint        []byte `gorm:"not null"`
	FingerprintVersion int    `gorm:"not null"`

	PaymentID string `gorm:"not null;size:40"`

	// CreatedAt is when the key was first used; it expires TTL later.
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false;index:idx_idempotency_keys_created"`
}

// IdempotencyAttempt is one request made with a payment's key: the one that
// created it, and every replay or rejection after it.
type IdempotencyAttempt struct {
	ID        int64     `gorm:"primaryKey;autoIncrement"`
	PaymentID string    `gorm:"not null;size:40;index:idx_idempotency_attempts_payment,priority:1"`
	Outcome   string    `gorm:"not null;size:16"`
	At        time.Time `gorm:"not null;index:idx_idempotency_attempts_payment,priority:2;index:idx_idempotency_attempts_at"`

	// DifferingFields lists, comma-separated, the payload fields of a
	// rejected attempt that differed from the payment's; empty otherwise.
	DifferingFields string `gorm:"not null;default:''"`

	// The payload a rejected attempt asked for, so support staff can show
	// the original and the attempted values side by side. Null otherwise.
	AttemptedAmountMinor *int64
	AttemptedCurrency    *string `gorm:"size:3"`
	AttemptedMethod      *string `gorm:"size:16"`

	// Transport says which API the attempt came through (graphql, rest).
	Transport string `gorm:"not null;size:16;default:''"`
}

// All lists every model, in migration order.
func All() []any {
	return []any{&Payment{}, &IdempotencyKey{}, &IdempotencyAttempt{}, &APIToken{}}
}
