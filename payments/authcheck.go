package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/processor"
)

// Old authorizations. A processor settles an authorization by itself:
// Stripe cancels a card's uncaptured PaymentIntent after 7 days, and staff
// may capture or cancel it in Stripe's dashboard. CMPay hears of it from
// the processor's events (learned.go), but an event can be lost (the
// endpoint misconfigured, its secret rotated, CMPay down longer than
// Stripe's 3 days of retries), and the payment would then show AUTHORIZED
// for good while its money was released or captured. So, as a PENDING Pix
// or boleto is read when its news is late (pending.go), an AUTHORIZED
// payment is read from its processor once a day from its first day on, by
// the Recoverer on every instance; what the read finds is applied as an
// event's read is (settleAuthorization). The sandbox never acts by itself:
// its authorizations are never read.

const (
	// authCheckEvery is how long an authorization goes unread: after its
	// creation, and after each read that found it standing. A constant, not
	// a setting: it follows what Stripe does (a 7-day expiry, and dashboard
	// actions at any time), not a deployment's taste. A day bounds how long
	// a lost event leaves a payment wrong, at one read a day per
	// authorization: an authorization left to expire costs 6 reads, and one
	// captured within a day, the usual case, none.
	authCheckEvery = 24 * time.Hour
	// authCheckRetry is how soon a claimed authorization whose read failed
	// (the processor down, or this instance stopped) is claimed again: a
	// lease longer than any read, which keeps other instances off it
	// meanwhile, and short beside authCheckEvery, so that an outage delays
	// the reads it failed by minutes, not by a day.
	authCheckRetry = 10 * time.Minute
	// authCheckBatch is how many authorizations one round claims and reads,
	// all at once: a round then takes at most one PROCESSOR_TIMEOUT, and
	// delays the Recoverer's next round of operations by no more. One
	// batch a round (every few seconds), never batch after batch: a
	// backlog (a million authorizations a day old after an upgrade) is
	// read a few a second per instance, never all at once.
	authCheckBatch = recoverAtOnce
)

// CheckAuthorizations claims up to authCheckBatch AUTHORIZED payments whose
// read is due (authCheckEvery) and reads each from its processor, settling
// those it canceled or captured by itself; it says how many it claimed. The
// Recoverer calls it once a round; tests call it directly. Payments with a
// capture or cancel pending are recovery's, and are not claimed.
func (s *Service) CheckAuthorizations(ctx context.Context) (int, error) {
	name := s.proc.Name()
	if name == processor.NameSandbox {
		return 0, nil
	}
	now := s.now()
	// The claim's stamp makes the payment due again authCheckRetry from now
	// unless its read records that the authorization stands.
	lease := now.Add(-authCheckEvery + max(authCheckRetry, s.timeout+leaseMargin))
	ids, err := s.store.claimAuthorizations(ctx, lease, now.Add(-authCheckEvery), name, authCheckBatch)
	if err != nil {
		return 0, fmt.Errorf("claim authorizations to read: %w", err)
	}
	return len(ids), atOnce(ids, authCheckBatch, "authorization", func(id string) error { return s.checkAuthorization(ctx, id) })
}

// checkAuthorization reads claimed payment id from its processor as a READ
// of its create (listed in its processorCalls, counted in the metrics), and
// settles it as an event's read would (learnAuthorization); an
// authorization that stands is stamped read now, so that it is not read
// again for authCheckEvery. A read that fails stamps nothing: the claim's
// lease makes it due again.
func (s *Service) checkAuthorization(ctx context.Context, id string) error {
	p, ok, err := s.store.readPayment(ctx, id)
	if err == nil && !ok {
		err = ErrNotFound
	}
	if err != nil {
		return err
	}
	if p.Status != StatusAuthorized || p.PendingOperation != "" {
		return nil // settled, or a capture or cancel started, since the claim
	}
	if err := s.learnAuthorization(ctx, p); err != nil {
		return err
	}
	// Settled just now, the payment is no longer AUTHORIZED: the stamp
	// passes over it.
	if _, err := s.store.db().Exec(ctx, commonSQL.SQL("authorization_stands"), p.ID, s.now()); err != nil {
		return fmt.Errorf("record the read of %s: %w", p.ID, err)
	}
	return nil
}

// checkAuthorizationsRound is the Recoverer's call of CheckAuthorizations,
// once a round, after the due operations.
func (s *Service) checkAuthorizationsRound(ctx context.Context, fails *logrepeat.Failures) {
	if _, err := s.CheckAuthorizations(ctx); ctx.Err() == nil {
		fails.Report(err)
	}
}
