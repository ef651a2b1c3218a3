package payments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
)

// The late check. A create or refund that recovery sent again under a new
// key (resend.go) leaves behind a request Stripe may still complete: its
// 500 is indeterminate, and Stripe may roll it forward while it remembers
// the key. The duplicate that makes is found by its event or by a recovery
// read that meets it (duplicates.go); an event can be lost (the endpoint
// misconfigured or not subscribed to the type, CMPay down past Stripe's
// retries), and a settled create is not searched again. So every such
// operation, once settled, is read once more after no earlier key's
// request can be completed any more, by the search recovery uses (the
// payment's id in the metadata; a refund: its payment's list of refunds),
// and what moved money besides the operation's own record is recorded as
// any duplicate is (found by FoundByLateCheck). Each operation is read so
// twice: once due, and again lateRecheckAfter later, for an intent
// Stripe's search showed later than STRIPE_SEARCH_LAG at the first read;
// then never again. A claim keeps other instances off it while one reads,
// and a stamp for each read (late_checked_at, late_rechecked_at) keeps it
// from being read so again. What the first read recorded, the second
// finds recorded (duplicates are keyed by the processor's id): it is not
// recorded, logged or counted twice. Only operations with a second key
// qualify, which the sandbox never gives one: it costs the sandbox no read
// and no row.

const (
	// lateCheckBatch is how many operations one round claims and reads,
	// all at once, as authCheckBatch is for authorizations: a round takes at
	// most one PROCESSOR_TIMEOUT, and a backlog (every operation resent
	// before an upgrade to this release) is read a few at a time.
	lateCheckBatch = recoverAtOnce
	// lateCheckRetry is how soon a claimed operation whose read failed is
	// claimed again: authCheckRetry's reasons (longer than any read, short
	// beside the day the check waits).
	lateCheckRetry = authCheckRetry
	// lateRecheckAfter is how long after its first read an operation is
	// read the second and last time. Long beside an outage of Stripe's
	// search (an hour at most, as Stripe says), within which an intent
	// made late may be missing from it at the first read; short beside the
	// months a payer has to dispute a second charge (120 days for cards),
	// so that staff refund a duplicate before its payer disputes it. A
	// constant, as authCheckEvery is: it follows Stripe, not a deployment.
	lateRecheckAfter = 24 * time.Hour
)

// lateSQL is the late check's statements: one claim for each dialect, and
// the stamp of an operation read.
var lateSQL = sqlq.MustLoad(sqlFiles, "sql/latecheck.sql")

// lateCheckAfter is how long after an operation got its current key (and
// after its last send) the late check reads it: the processor's key
// lifetime (Stripe: 24 hours, KeyLifetime; a request under an earlier key
// was first sent before the current key was given, so none can be completed
// later than that after it), plus keyMargin for Stripe's clock against
// CMPay's and the request's own time, plus STRIPE_SEARCH_LAG, within which
// an intent made at the window's last moment shows in search. Not ok for a
// processor that does not say how long it remembers a key.
func (s *Service) lateCheckAfter() (time.Duration, bool) {
	kl, ok := s.proc.(interface{ KeyLifetime() time.Duration })
	if !ok {
		return 0, false
	}
	return kl.KeyLifetime() + keyMargin + s.searchLag, true
}

// CheckLateCompletions claims up to lateCheckBatch settled creates and
// refunds sent again under a new key whose late check is due (the first
// read lateCheckAfter, the second lateRecheckAfter after the first),
// reads each from the processor, and records the duplicates found; it
// says how many it claimed. The Recoverer calls it
// once a round; tests call it directly.
func (s *Service) CheckLateCompletions(ctx context.Context) (int, error) {
	after, ok := s.lateCheckAfter()
	if !ok {
		return 0, nil
	}
	now := s.now()
	lease := now.Add(max(lateCheckRetry, s.timeout+leaseMargin))
	ids, err := s.store.claimLateChecks(ctx, lease, now.Add(-after), now.Add(-lateRecheckAfter), s.proc.Name(), now,
		lateCheckBatch)
	if err != nil {
		return 0, fmt.Errorf("claim operations to check for late completions: %w", err)
	}
	return len(ids), atOnce(ids, lateCheckBatch, "late check of operation", func(id string) error {
		return s.lateCheck(ctx, id)
	})
}

// lateCheck reads claimed operation id's payment (a create) or refund
// from the processor, records what it finds besides the operation's own
// record, and stamps the read: the first, or the second and last. A read
// that fails stamps nothing: the claim runs out, and another round reads
// it again.
func (s *Service) lateCheck(ctx context.Context, id string) error {
	op, err := scanOperation(s.store.db().QueryRow(ctx, commonSQL.SQL("read_operation"), id))
	if err != nil {
		return fmt.Errorf("read operation: %w", err)
	}
	var first *time.Time
	if err := s.store.db().QueryRow(ctx, lateSQL.SQL("late_checks_made"), id).Scan(&first); err != nil {
		return fmt.Errorf("read the operation's late checks: %w", err)
	}
	p, ok, err := s.store.readPayment(ctx, op.paymentID)
	if err == nil && !ok {
		err = ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read its payment %s: %w", op.paymentID, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if op.operation == OpRefund {
		err = s.lateCheckRefund(callCtx, op, p, first != nil)
	} else {
		err = s.lateCheckCreate(callCtx, op, p)
	}
	if err != nil {
		return err
	}
	stamp := lateSQL.SQL("late_checked")
	if first != nil {
		stamp = lateSQL.SQL("late_rechecked")
	}
	if _, err := s.store.db().Exec(ctx, stamp, op.id, s.now()); err != nil {
		return fmt.Errorf("record the late check: %w", err)
	}
	return nil
}

// lateCheckCreate searches the processor for op's payment, as recovery
// does, and records every payment found for it that moved or may move
// money, or waits for its payer, and is not p's own; one that waits is
// canceled there too (cancelWaiting), and a cancel that fails is an
// error, so that the check is made again. A payment settled without a
// reference (a decline the processor gave none for) has no own: any that
// moved money or waits is recorded, since CMPay says none did.
func (s *Service) lateCheckCreate(ctx context.Context, op operationRow, p Payment) error {
	start := time.Now()
	found, err := s.processorNamed(op.processor).FindPayments(ctx, op.paymentID)
	s.strayCalled(OpCreate, lateReadOutcome(err), time.Since(start))
	if err != nil {
		return fmt.Errorf("search the processor for payment %s: %w", op.paymentID, err)
	}
	for _, rec := range found {
		if rec.PaymentID != op.paymentID || rec.Reference == p.ProcessorReference ||
			!movesMoney(rec.State) && !waiting(rec.State) {
			continue
		}
		if err := s.recordDuplicate(ctx, s.paymentDuplicate(op.paymentID, op.processor, rec, FoundByLateCheck)); err != nil {
			return err
		}
		if waiting(rec.State) {
			if err := s.cancelWaiting(ctx, op.processor, op.paymentID, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// lateCheckRefund reads the list of refunds of op's payment, as recovery
// does, and records every refund carrying op's refund id that succeeded
// or is pending and is not the refund's own record. A refund CMPay FAILED
// without a reference (its new key's request refused, and no refund with
// its id listed then) that the list shows made after all is settled so
// first (failedRefundMade); one not settled so is recorded only at the
// operation's second and last late read (last), when it can no longer be.
//
// The payment has a processor reference: a refund is taken only of a
// captured payment, a payment at a processor other than the sandbox is
// captured only by an answer or a record of the processor, which names
// the intent, and no statement clears a reference once stored; and the
// refund was sent again only after the list of that reference's refunds
// showed it not done. One without (a row changed by hand, a restore gone
// wrong) is an error, never stamped as read: nothing would say where to
// look, and a stamp would hide that the check was never made.
func (s *Service) lateCheckRefund(ctx context.Context, op operationRow, p Payment, last bool) error {
	if op.refundID == nil || p.ProcessorReference == "" {
		return fmt.Errorf("refund operation %s of payment %s: no refund id or no processor reference of the payment "+
			"to list its refunds by", op.id, op.paymentID)
	}
	var status string
	var ref *string
	var amount int64
	if err := s.store.db().QueryRow(ctx, lateSQL.SQL("late_refund_state"), *op.refundID).Scan(&status, &ref,
		&amount); err != nil {
		return fmt.Errorf("read refund %s: %w", *op.refundID, err)
	}
	start := time.Now()
	all, err := s.processorNamed(op.processor).ListRefunds(ctx, p.ProcessorReference)
	took := time.Since(start)
	s.strayCalled(OpRefund, lateReadOutcome(err), took)
	if err != nil {
		return fmt.Errorf("list the refunds of payment %s at the processor: %w", op.paymentID, err)
	}
	failed := RefundStatus(status) == RefundFailed && ref == nil
	if failed {
		made, err := s.failedRefundMade(ctx, op, amount, all, took)
		if err != nil {
			return err
		}
		if made != "" {
			ref, failed = &made, false
		}
	}
	for _, res := range all {
		if res.RefundID != *op.refundID || ref != nil && res.Reference == *ref || !refundMovesMoney(res.State) {
			continue
		}
		if failed && !last {
			// The second read settles the refund on this one if it has
			// succeeded and the payment can count it by then; a record
			// written now, never removed, would then name the refund's
			// own as a second one.
			continue
		}
		d := s.refundDuplicate(op.paymentID, op.processor, res, FoundByLateCheck)
		d.ownFailed = failed
		if err := s.recordDuplicate(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// failedRefundMade settles refund op, of amount, which CMPay FAILED
// without a reference, SUCCEEDED on the first refund in all (its
// payment's refunds at the processor) that carries its id and succeeded
// (settleFailedRefund), with the list's read as a READ of its operation,
// and answers the reference it is settled on; "" when none did, or the
// payment cannot count it (then it is recorded as a duplicate, as before,
// which the admin explains).
func (s *Service) failedRefundMade(ctx context.Context, op operationRow, amount int64, all []processor.Refund,
	took time.Duration) (string, error) {
	one := slices.IndexFunc(all, func(res processor.Refund) bool {
		return res.RefundID == *op.refundID && res.State == processor.RefundSucceeded && res.AmountMinor == amount
	})
	if one < 0 {
		return "", nil
	}
	res := all[one]
	return s.settleFailedRefund(ctx, op.paymentID, *op.refundID, amount, res, func(r sqlq.Runner, now time.Time) error {
		return insertCall(ctx, r, op, callRead, refundOutcome(res, nil), now, took)
	})
}

// settleFailedRefund settles refund id of payment paymentID, of amount,
// which CMPay FAILED without a reference, SUCCEEDED on res, a refund the
// processor made that carries its id, succeeded, of its amount, on the
// payment's PaymentIntent: the late check's read of the payment's refunds
// (failedRefundMade) and an event naming res (learned.go) both come here,
// so the two settle it alike, and once. read, when not nil, records in the
// same transaction the read that found res. It answers the reference the
// refund is settled on: res's, or the one an event or another instance
// settled it on first; "" when the payment cannot count it.
//
// The contract has every operation end in the state the processor says
// it is in, and no refund "failed" while money moved; it calls DECLINED
// and EXPIRED final, not a refund's FAILED. A refund carrying the id was
// made by one of the operation's own keys (each carries it), which the
// processor completed after CMPay read its list the last time: it is the
// refund the merchant asked for, not a second one. So, as a refund the
// payer's bank returned is FAILED after it SUCCEEDED (learned.go), this
// one is SUCCEEDED after it FAILED, in one transaction: the refund, its
// amount counted refunded, and PAYMENT_REFUNDED under the refund's key.
// The operation and the client's key stay as answered (the refusal), as a
// returned refund's do.
func (s *Service) settleFailedRefund(ctx context.Context, paymentID, id string, amount int64, res processor.Refund,
	read func(r sqlq.Runner, now time.Time) error) (string, error) {
	now, settled, counted := s.now(), res.Reference, false
	err := s.store.db().Tx(ctx, func(r sqlq.Runner) error {
		n, err := r.Exec(ctx, lateSQL.SQL("succeed_failed_refund"), id, res.Reference, now)
		if err != nil {
			return err
		}
		if n == 0 {
			// Settled so already, by an event or another instance, on the
			// refund it chose; or res is recorded as a duplicate (the last
			// late read's word stands), and the reference stays NULL.
			var ref *string
			if err := r.QueryRow(ctx, commonSQL.SQL("refund_reference"), id).Scan(&ref); err != nil {
				return fmt.Errorf("read refund %s: %w", id, err)
			}
			settled = deref(ref)
			return nil
		}
		got, err := scanPayment(r.QueryRow(ctx, lateSQL.SQL("count_refund_made"), paymentID, amount))
		if errors.Is(err, sqlq.ErrNoRows) {
			return errNotCounted
		}
		if err != nil {
			return fmt.Errorf("count refund %s on payment %s: %w", id, paymentID, err)
		}
		refund, err := readRefund(ctx, r, id, got)
		if err != nil {
			return err
		}
		if read != nil {
			if err := read(r, now); err != nil {
				return err
			}
		}
		counted = true
		return insertEvent(ctx, r, EventRefunded, refund.IdempotencyKey, got, refund, now)
	})
	if errors.Is(err, errNotCounted) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("settle refund %s, FAILED, on %s the processor made: %w", id, res.Reference, err)
	}
	if counted {
		s.log.Warn("the processor made a refund CMPay had marked FAILED: settled SUCCEEDED",
			"payment", paymentID, "refund", id, "processor_id", res.Reference)
	}
	return settled, nil
}

// errNotCounted rolls back a FAILED refund's settling when its payment
// cannot count it refunded.
var errNotCounted = errors.New("the payment cannot count the refund")

// lateReadOutcome is what a late check's read came to, for the metrics.
func lateReadOutcome(err error) outcome {
	if err != nil {
		return errorOutcome(err)
	}
	return outcome{call: CallSucceeded}
}

// checkLateRound is the Recoverer's call of CheckLateCompletions, once a
// round, after the old authorizations.
func (s *Service) checkLateRound(ctx context.Context, fails *logrepeat.Failures) {
	if _, err := s.CheckLateCompletions(ctx); ctx.Err() == nil {
		fails.Report(err)
	}
}

// claimLateChecks skips the operations others are claiming (SKIP LOCKED).
// due bounds the first read's key and last send, redue the first read of
// those due for their second.
func (st *postgresStore) claimLateChecks(ctx context.Context, lease, due, redue time.Time, processor string, now time.Time, limit int) ([]string, error) {
	return sqlq.Collect(ctx, st.pg, lateSQL.SQL("claim_late_checks_postgres"),
		[]any{lease, due, processor, now, limit, redue}, scanID)
}

// claimLateChecks relies on SQLite's one writer.
func (st *sqliteStore) claimLateChecks(ctx context.Context, lease, due, redue time.Time, processor string, now time.Time, limit int) ([]string, error) {
	return sqlq.Collect(ctx, st.lite, lateSQL.SQL("claim_late_checks_sqlite"),
		[]any{lease, due, processor, now, limit, redue}, scanID)
}
