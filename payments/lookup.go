package payments

import (
	"context"
	"errors"
	"fmt"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// lookupSQL is the statements that find a payment by what names it besides
// its id.
var lookupSQL = sqlq.MustLoad(sqlFiles, "sql/lookup.sql")

// PaymentOfRefund is the id of the payment refund id (ref_…) gives money
// back from; ErrNotFound when there is no such refund.
func (s *Service) PaymentOfRefund(ctx context.Context, id string) (string, error) {
	return s.lookup(ctx, "payment_of_refund", "refund", id)
}

// PaymentOfReference is the id of the payment its processor knows as ref
// (the sandbox's sbx_pi_…, a Stripe PaymentIntent's pi_…); ErrNotFound when
// no payment has that reference.
func (s *Service) PaymentOfReference(ctx context.Context, ref string) (string, error) {
	return s.lookup(ctx, "payment_of_reference", "processor reference", ref)
}

// lookup runs the statement name, which finds one payment id by value.
func (s *Service) lookup(ctx context.Context, name, what, value string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var id string
	err := s.store.db().QueryRow(ctx, lookupSQL.SQL(name), value).Scan(&id)
	if errors.Is(err, sqlq.ErrNoRows) {
		return "", fmt.Errorf("payment of %s %q: %w", what, value, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("find the payment of %s %q: %w", what, value, err)
	}
	return id, nil
}
