package models

import "time"

// ProcessorEvent is an event the processor posted (Stripe's webhook),
// stored once by its id however often it comes, and applied to the payment
// it names once that payment is known. Rows are kept: the admin shows every
// event a payment received.
type ProcessorEvent struct {
	// ID is the processor's event id (Stripe: evt_…).
	ID        string `gorm:"primaryKey;size:255;index:idx_processor_events_waiting,priority:2"`
	Processor string `gorm:"not null;size:16"`
	Type      string `gorm:"not null;size:100"`
	// PaymentReference is the processor's id of the payment the event is
	// about (for a refund's event, the refunded payment's).
	PaymentReference string `gorm:"not null;size:255;index:idx_processor_events_payment,priority:1"`
	// Created is the processor's time of the event, which orders them.
	Created time.Time `gorm:"not null;index:idx_processor_events_payment,priority:2"`
	// ReceivedAt is when CMPay stored it; the sweep deletes by it, oldest
	// first, through its index. The retrier walks the events not applied
	// yet newest first, by (received_at, id), through a partial index that
	// holds only those: in that order whatever the table's statistics say,
	// so that a page reads its rows and stops.
	ReceivedAt time.Time `gorm:"not null;index:idx_processor_events_received;index:idx_processor_events_waiting,priority:1,where:applied_at IS NULL"`
	// AppliedAt is when CMPay applied it; unset while the payment it names
	// is not known yet (an event may come before CMPay has recorded the
	// processor's answer), so it is tried again.
	AppliedAt *time.Time
	// Payload is the event as posted, verified.
	Payload string `gorm:"not null"`
}
