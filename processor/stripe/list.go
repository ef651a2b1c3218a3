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
// (Unix seconds, both included; every page, from walk's on) and keeps
// those whose metadata['cmpay_payment_id'] is paymentID. A list, unlike
// search, reads Stripe's records as they are: an intent made before the
// call is in it. Stripe lists newest first and pages by starting_after,
// the last id read, so walk moves on page by page: an intent created
// since lands before the cursor, where no intent of a create whose sends
// have all ended can be.
func (c *Connector) ListPaymentsCreated(ctx context.Context, paymentID string, from, to time.Time, walk *processor.ListWalk) ([]processor.Payment, error) {
	if walk == nil {
		walk = &processor.ListWalk{}
	}
	if walk.Done {
		return append([]processor.Payment{}, walk.Found...), nil
	}
	p := &stripeapi.PaymentIntentListParams{CreatedRange: &stripeapi.RangeQueryParams{
		GreaterThanOrEqual: from.Unix(), LesserThanOrEqual: to.Unix()}}
	p.Limit = stripeapi.Int64(listPage)
	if walk.After != "" {
		p.StartingAfter = stripeapi.String(walk.After)
	}
	return call(ctx, c, "list_payments", func(ctx context.Context) ([]processor.Payment, error) {
		// Only the fetch of a page fails: the iterator yields a page's
		// intents from memory, so walk at the last one yielded is at the
		// end of the last page read.
		for pi, err := range c.client.V1PaymentIntents.List(ctx, p) {
			if err != nil {
				return nil, err
			}
			if pi.Metadata["cmpay_payment_id"] == paymentID {
				walk.Found = append(walk.Found, paymentFrom(pi))
			}
			walk.After = pi.ID
		}
		walk.Done = true
		return append([]processor.Payment{}, walk.Found...), nil
	})
}

var _ processor.CreatedLister = (*Connector)(nil)
