package payments

import (
	"time"

	"github.com/cmpay/cmpay/models"
)

// An event's payment (Payment.AsOf set) is the payment as the event left
// it. Its refunds, attempts and processor calls are read as they stood at
// the event's time, so that its lists agree with its status and amounts
// however much later it is read: a webhook retried for days, a
// subscription replayed from `after`. The stored times are all there is
// to go by, so two instances whose clocks disagree may place a change
// made within that difference on the wrong side of an event.

// RefundAsOf is the refund row, of a payment in currency, as it stood at
// at, and false when it did not exist yet. A refund is PROCESSING from
// its creation until settled_at (one without it settled as it was
// created: the sandbox's, and every refund made before processors), then
// SUCCEEDED or FAILED; one returned by the payer's bank (returned_at) was
// SUCCEEDED until then. A refund is settled in the transaction that
// writes its event, at the event's time, so its own event sees it
// settled.
func RefundAsOf(row models.Refund, currency string, at time.Time) (Refund, bool) {
	if row.CreatedAt.After(at) {
		return Refund{}, false
	}
	r := refundFromRow(row, currency)
	if row.ReturnedAt != nil && row.ReturnedAt.After(at) {
		r.Status, r.FailureCode, r.ReturnedAt = RefundSucceeded, "", time.Time{}
	}
	settled := row.SettledAt
	if settled == nil && r.Status != RefundProcessing {
		settled = &row.CreatedAt
	}
	if settled == nil || settled.After(at) {
		r.Status, r.FailureCode, r.ReturnedAt = RefundProcessing, "", time.Time{}
	}
	return r, true
}

// RefundsAt is p's refunds among rows, the refunds of p's payment oldest
// first: as they stood at p.AsOf for an event's payment, as they are for
// any other.
func RefundsAt(rows []models.Refund, p Payment) []Refund {
	out := make([]Refund, 0, len(rows))
	for _, row := range rows {
		if p.AsOf.IsZero() {
			out = append(out, refundFromRow(row, p.Amount.Currency))
		} else if r, ok := RefundAsOf(row, p.Amount.Currency, p.AsOf); ok {
			out = append(out, r)
		}
	}
	return out
}

// after reports whether something stored at t happened after p's event,
// when p is an event's payment.
func (p Payment) after(t time.Time) bool {
	return !p.AsOf.IsZero() && t.After(p.AsOf)
}
