package payments

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
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
// (a Stripe PaymentIntent's pi_…; the sandbox's sbx_pi.… too when this
// server runs the sandbox); ErrNotFound when no payment has that
// reference. The sandbox's references are not indexed (see
// models.Payment), so they are looked for only where the sandbox runs
// (development, where a table read is cheap), and only for a ref shaped
// as the sandbox makes them: the admin's search asks here for every
// client id or key it is given, which must not read the table each time.
func (s *Service) PaymentOfReference(ctx context.Context, ref string) (string, error) {
	id, err := s.lookup(ctx, "payment_of_reference", "processor reference", ref)
	if errors.Is(err, ErrNotFound) && s.proc.Name() == processor.NameSandbox && strings.HasPrefix(ref, sandboxRefPrefix) {
		return s.lookup(ctx, "payment_of_sandbox_reference", "processor reference", ref)
	}
	return id, err
}

// sandboxRefPrefix begins every reference the sandbox gives a payment
// (processor/sandbox/reference.go).
const sandboxRefPrefix = "sbx_pi."

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
