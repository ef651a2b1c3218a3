package processor

import "time"

// Event is a verified event a processor posted, decoded into the seam's
// types. Events come repeated, late and out of order: ID identifies one
// (store it once), Created orders them, and when in doubt the payment is
// read from the processor.
type Event struct {
	ID      string
	Type    string
	Created time.Time
	// PaymentReference is the payment the event is about, whatever its
	// type (for a refund: the refunded payment).
	PaymentReference string
	// Payment is the payment as the event carries it (payment_intent.*).
	Payment *Payment
	// Refund is the refund as the event carries it (refund.*).
	Refund *Refund
	// Refunds are the refunds a charge.refunded event carries, when it
	// carries them (Stripe leaves them out in recent API versions: list
	// them with ListRefunds).
	Refunds []Refund
	// RefundedMinor is how much of the payment is refunded in all
	// (charge.refunded).
	RefundedMinor int64
	// Other says the event carries an object CMPay does not act on (a
	// dispute, in charge.dispute.*): it is stored, listed with its payment,
	// and applied as nothing.
	Other bool
}
