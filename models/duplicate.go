package models

import "time"

// ProcessorDuplicate is a second payment or refund the processor holds for
// one of CMPay's: one it made when it completed late a request whose answer
// had been an error, after recovery had sent the same operation again
// under a new key (payments/resend.go). It is evidence of money moved
// twice, for staff to put right at the processor; CMPay never acts on it
// by itself. Stored once per processor id, however often it is found;
// rows are only ever inserted (database/migrations, 0014).
type ProcessorDuplicate struct {
	// Reference is the processor's id of the duplicate (Stripe: pi_… or
	// re_…).
	Reference string `gorm:"primaryKey;size:255"`
	Processor string `gorm:"not null;size:16"`
	// PaymentID is the CMPay payment the duplicate names; RefundID the
	// CMPay refund, for a refund's duplicate.
	PaymentID string  `gorm:"not null;size:40;index:idx_processor_duplicates_payment"`
	RefundID  *string `gorm:"size:40"`
	// Operation is CREATE_PAYMENT or REFUND_PAYMENT.
	Operation string `gorm:"not null;size:20"`
	// AmountMinor, Currency and State are as the processor stated them
	// when the duplicate was found (State in the processor seam's words:
	// captured, authorized, processing; succeeded, pending).
	AmountMinor int64  `gorm:"not null"`
	Currency    string `gorm:"not null;size:3"`
	State       string `gorm:"not null;size:20"`
	// FoundBy says what found it: "event" (the processor's event about
	// it), "recovery" (a read that found it beside the one settled on) or
	// "late_check" (the read of an operation sent again under a new key,
	// a day later: payments/latecheck.go).
	FoundBy string    `gorm:"not null;size:16"`
	FoundAt time.Time `gorm:"not null"`
}
