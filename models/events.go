package models

import "time"

// PaymentEvent is one row of the outbox: something that happened to a
// payment, written by the very statement (PostgreSQL) or transaction
// (SQLite) that made it happen, so that nothing is announced that did not
// happen and nothing that happened goes unannounced.
//
// Seq is given at insert, in insertion order, which is not commit order.
// The public event id is given after commit (package events): on SQLite it
// is the seq itself (one writer at a time), on PostgreSQL the sequencer's
// numbering, recorded per pass in event_batches. Rows are never updated:
// an event costs the change one insert and its primary key, nothing more:
// the admin's Webhooks page finds a payment's or a client's deliveries by
// WebhookDelivery's own columns, written when the deliveries are made.
//
// The row carries the payment as it was right after the event (status,
// amounts, times, counters), so that a delivery made days later shows that
// state, not the payment as it is by then.
type PaymentEvent struct {
	Seq int64 `gorm:"primaryKey;autoIncrement"`

	// Type is PAYMENT_CREATED, PAYMENT_CAPTURED, PAYMENT_CANCELED or
	// PAYMENT_REFUNDED; At is when the change was made (the payment's
	// created_at, captured_at, canceled_at, or the refund's created_at).
	Type string    `gorm:"not null;size:24"`
	At   time.Time `gorm:"not null"`
	// IdempotencyKey is the key of the request that caused the event.
	IdempotencyKey string `gorm:"not null;size:100"`
	// RefundID is a refund event's refund.
	RefundID *string `gorm:"size:40"`

	// The payment right after the event: models.Payment's columns, prefixed.
	PaymentID        string    `gorm:"not null;size:40"`
	ClientID         string    `gorm:"not null;size:100"`
	PaymentKey       string    `gorm:"not null;size:100"`
	AmountMinor      int64     `gorm:"not null"`
	Currency         string    `gorm:"not null;size:3"`
	Method           string    `gorm:"not null;size:16"`
	PaymentCreatedAt time.Time `gorm:"not null"`
	Status           string    `gorm:"not null;size:20"`
	CapturedMinor    int64     `gorm:"not null"`
	RefundedMinor    int64     `gorm:"not null"`
	CapturedAt       *time.Time
	CanceledAt       *time.Time
	ReplayCount      int `gorm:"not null"`
	RejectedCount    int `gorm:"not null"`
}

// EventCursor is where the sequencer stands (package events), saved about
// once a second so that a new leader carries on exactly: on PostgreSQL,
// every event with a seq up to Frontier is numbered or will never be
// visible, Numbered lists the seqs above it that were numbered ("12,15"),
// and LastID is the last id given then (the passes after it are read from
// event_batches); on SQLite, Frontier is the last event whose deliveries
// were created.
type EventCursor struct {
	Name     string `gorm:"primaryKey;size:20"`
	Frontier int64  `gorm:"not null;default:0"`
	Numbered string `gorm:"not null;default:''"`
	LastID   int64  `gorm:"not null;default:0"`
}

// WebhookEndpoint is a URL that receives signed POSTs of payment events.
// Deleting one stamps DeletedAt: its deliveries stay for the admin to see.
type WebhookEndpoint struct {
	ID  string `gorm:"primaryKey;size:40"`
	URL string `gorm:"not null;size:2048"`
	// Secret signs every delivery (HMAC-SHA256). It is shown once, when the
	// endpoint is created, and kept here to sign with: sealed when the
	// server has a WEBHOOK_SECRET_KEY (webhooks/secret.go), as given if not.
	// A sealed secret is 83 characters. Keep the size: a version whose
	// model said less would cut longer values when it migrates (GORM alters
	// a column's type with "USING secret::varchar(n)", a cast PostgreSQL
	// truncates with, silently).
	Secret string `gorm:"not null;size:100"`
	// EventTypes is ",PAYMENT_CREATED,PAYMENT_REFUNDED," or "" for every
	// type: a form both dialects can match with LIKE.
	EventTypes string `gorm:"not null;size:200;default:''"`
	// ClientID, when not empty, is the only client whose events the
	// endpoint receives (it was created with a client-bound token).
	ClientID  string    `gorm:"not null;size:100;default:''"`
	CreatedAt time.Time `gorm:"not null;autoCreateTime:false"`
	DeletedAt *time.Time
}

// WebhookDelivery is one event to deliver to one endpoint, created by the
// sequencer in the same transaction that gives the event its id.
//
// A delivery is PENDING until an attempt gets a 2xx answer (DELIVERED), its
// retries run out (FAILED), or its endpoint is deleted (CANCELED). An
// instance claims a due delivery by setting LeaseUntil and a fresh
// ClaimToken; only the holder of the token may record the attempt, and an
// instance that dies mid-attempt leaves a lease that simply runs out.
//
// The admin lists deliveries newest first by ID, which follows creation,
// keyset-paged, each filter through an index that ends in the ID: by
// endpoint, by payment, by client, and by status only for FAILED and
// CANCELED (a partial index: the rows support looks for), so that claims
// and records of PENDING and DELIVERED ones add no entry to it. DELIVERED
// and PENDING pages walk the primary key (and idx_webhook_deliveries_due).
type WebhookDelivery struct {
	ID int64 `gorm:"primaryKey;autoIncrement;index:idx_webhook_deliveries_endpoint,priority:2;index:idx_webhook_deliveries_payment,priority:2;index:idx_webhook_deliveries_client,priority:2;index:idx_webhook_deliveries_failed,priority:2"`
	// EventID is the event's public id, EventSeq its outbox row.
	EventID    int64  `gorm:"not null"`
	EventSeq   int64  `gorm:"not null;index:idx_webhook_deliveries_event"`
	EndpointID string `gorm:"not null;size:40;index:idx_webhook_deliveries_endpoint,priority:1"`
	// EventPaymentID and EventClientID are the event's payment and its
	// client, copied from the event by the pass that makes the deliveries
	// (package events, off the request path), so that the admin's filters
	// by payment and by client read this table only, and a delivery keeps
	// them once its event is swept. "" on a delivery made before they
	// existed whose event was already swept (migration 0011 filled the
	// others).
	EventPaymentID string    `gorm:"column:payment_id;not null;size:40;default:'';index:idx_webhook_deliveries_payment,priority:1"`
	EventClientID  string    `gorm:"column:client_id;not null;size:100;default:'';index:idx_webhook_deliveries_client,priority:1"`
	Status         string    `gorm:"not null;size:16;index:idx_webhook_deliveries_failed,priority:1,where:status = 'FAILED' OR status = 'CANCELED'"`
	EventAt        time.Time `gorm:"not null"`
	CreatedAt      time.Time `gorm:"not null;autoCreateTime:false"`
	// Attempts counts every attempt made; Retries the failed ones since the
	// delivery was last armed (created or resent), which sets the backoff.
	Attempts int `gorm:"not null;default:0"`
	Retries  int `gorm:"not null;default:0"`
	// NextAttemptAt is when the delivery is due; ExpiresAt, if set, when its
	// retries end (otherwise EventAt plus WEBHOOK_MAX_AGE).
	NextAttemptAt time.Time `gorm:"not null;index:idx_webhook_deliveries_due,where:status = 'PENDING'"`
	ExpiresAt     *time.Time
	LeaseUntil    *time.Time
	ClaimToken    int64 `gorm:"not null;default:0"`
	// The last attempt: when, the HTTP status (0: no answer), and what went
	// wrong or the start of the answer's body.
	LastAttemptAt *time.Time
	LastStatus    int    `gorm:"not null;default:0"`
	LastError     string `gorm:"not null;size:500;default:''"`
	DeliveredAt   *time.Time
	// Body is the JSON body the delivery's last attempt sent, stored when
	// it is recorded FAILED, so that a resend sends those same bytes
	// without its event, which the events sweep then need not keep. NULL
	// until then, and on deliveries that failed before schema version 12.
	Body *string `gorm:"type:text"`
}

// WebhookAttempt is one attempt at a delivery, for the admin's history.
type WebhookAttempt struct {
	ID         int64     `gorm:"primaryKey;autoIncrement"`
	DeliveryID int64     `gorm:"not null;index:idx_webhook_attempts_delivery"`
	At         time.Time `gorm:"not null"`
	Status     int       `gorm:"not null"`
	Error      string    `gorm:"not null;size:500;default:''"`
	DurationMS int64     `gorm:"not null"`
}
