package stripe

import (
	"context"
	"time"

	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
)

// listPage is the most a page of Stripe's lists holds.
const listPage = 100

// ListPaymentsCreated lists the PaymentIntents created between from and to
// (Unix seconds, both included; every page) and keeps those whose
// metadata['cmpay_payment_id'] is paymentID. A list, unlike search, reads
// Stripe's records as they are: an intent made before the call is in it.
func (c *Connector) ListPaymentsCreated(ctx context.Context, paymentID string, from, to time.Time) ([]processor.Payment, error) {
	p := &stripeapi.PaymentIntentListParams{CreatedRange: &stripeapi.RangeQueryParams{
		GreaterThanOrEqual: from.Unix(), LesserThanOrEqual: to.Unix()}}
	p.Limit = stripeapi.Int64(listPage)
	return call(ctx, c, "list_payments", func(ctx context.Context) ([]processor.Payment, error) {
		out := []processor.Payment{}
		for pi, err := range c.client.V1PaymentIntents.List(ctx, p) {
			if err != nil {
				return nil, err
			}
			if pi.Metadata["cmpay_payment_id"] == paymentID {
				out = append(out, paymentFrom(pi))
			}
		}
		return out, nil
	})
}

var _ processor.CreatedLister = (*Connector)(nil)
