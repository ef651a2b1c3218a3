package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
)

// What CMPay learns from its processor after it settled an operation. A
// processor can change what CMPay had settled without being asked: Stripe
// cancels an authorization nobody captured (after 7 days for cards),
// staff can capture one in Stripe's dashboard, and a refund that
// succeeded fails when the payer's bank returns it (a closed card). Its
// events say so; nothing else would, since only unsettled work is read
// again. An event is news, not the record: the record is read from the
// processor, and what it says is applied by a conditional update from the
// settled state, so the same news twice, or from two instances at once,
// changes it once.

// learnFromEvent applies what event ev says changed at the processor about
// p, a payment whose operations CMPay had settled: an authorization
// captured or canceled there, a refund failed after it succeeded, or a
// refund CMPay FAILED that the processor made after all.
func (s *Service) learnFromEvent(ctx context.Context, p Payment, ev processor.Event) error {
	if p.Status == StatusAuthorized && p.PendingOperation == "" && ev.Payment != nil &&
		ev.Payment.State != processor.PaymentAuthorized {
		return s.learnAuthorization(ctx, p)
	}
	var errs []error
	for _, r := range eventRefunds(ev) {
		errs = append(errs, s.learnRefund(ctx, p, r))
	}
	return errors.Join(errs...)
}

// eventRefunds are the refunds an event carries: a refund.* event's, a
// charge.refund.updated's, or those a charge.refunded lists.
func eventRefunds(ev processor.Event) []processor.Refund {
	if ev.Refund != nil {
		return append([]processor.Refund{*ev.Refund}, ev.Refunds...)
	}
	return ev.Refunds
}

// learnAuthorization reads AUTHORIZED payment p from its processor and
// settles it as the record says (settleAuthorization).
func (s *Service) learnAuthorization(ctx context.Context, p Payment) error {
	rec, err := s.readRecord(ctx, p)
	if err != nil {
		return err
	}
	return s.settleAuthorization(ctx, p, rec)
}

// settleAuthorization settles AUTHORIZED payment p as rec, its processor's
// record, says when the processor captured or canceled it by itself: with
// its event under the payment's own key (no request of CMPay's did it), as
// applyChange does for a capture or cancel that finds the other done. An
// event and a read of an old authorization (authcheck.go) both come here,
// so the two settle it alike, and once.
func (s *Service) settleAuthorization(ctx context.Context, p Payment, rec processor.Payment) error {
	status, typ, captured := StatusCaptured, EventCaptured, rec.CapturedMinor
	switch rec.State {
	case processor.PaymentCaptured:
		if captured <= 0 || captured > p.Amount.Minor {
			captured = p.Amount.Minor
		}
	case processor.PaymentCanceled:
		status, typ, captured = StatusCanceled, EventCanceled, 0
	default:
		return nil // still authorized there (or not yet final): nothing to settle
	}
	now := s.now()
	return s.store.db().Tx(ctx, func(r sqlq.Runner) error {
		got, err := scanPayment(r.QueryRow(ctx, commonSQL.SQL("settle_elsewhere"), p.ID, string(status), captured, now))
		if errors.Is(err, sqlq.ErrNoRows) {
			return nil // no longer AUTHORIZED with nothing pending: someone came first
		}
		if err != nil {
			return fmt.Errorf("settle payment %s as its processor left it: %w", p.ID, err)
		}
		return insertEvent(ctx, r, typ, got.IdempotencyKey, got, nil, now)
	})
}

// learnRefund reads from payment p's processor a refund an event names
// when what CMPay settled may no longer hold: one SUCCEEDED the event says
// is not, failed if the processor says it failed; one FAILED without a
// reference, which the processor may have made after all
// (learnFailedRefund). The rest cost no read: unsettled ones are
// recovery's (wake_operations), and one FAILED with a reference (refused,
// or returned by the payer's bank) is final.
func (s *Service) learnRefund(ctx context.Context, p Payment, news processor.Refund) error {
	var id, status string
	var amount int64
	var ref *string
	err := s.store.db().QueryRow(ctx, commonSQL.SQL("refund_named"), p.ID, news.Reference, news.RefundID).
		Scan(&id, &status, &amount, &ref)
	if errors.Is(err, sqlq.ErrNoRows) {
		return nil // not one of CMPay's refunds
	}
	if err != nil {
		return fmt.Errorf("find the refund %s of %s: %w", news.Reference, p.ID, err)
	}
	if RefundStatus(status) == RefundFailed && ref == nil {
		return s.learnFailedRefund(ctx, p, id, amount, news)
	}
	if RefundStatus(status) != RefundSucceeded || news.State == processor.RefundSucceeded {
		return nil
	}
	reference := news.Reference
	if ref != nil && *ref != "" {
		reference = *ref
	}
	rec, err := s.readRefundRecord(ctx, p, id, reference)
	if err != nil {
		return err
	}
	if rec.State != processor.RefundFailed || rec.PaymentReference != p.ProcessorReference {
		return nil
	}
	return s.returnRefund(ctx, p.ID, id, amount, rec.FailureCode)
}

// learnFailedRefund settles refund id of payment p, of amount, which CMPay
// FAILED without a reference (its new key's request refused, and no
// refund with its id listed then), as the late check would a day later
// (settleFailedRefund): when the processor's record of news, the refund
// an event names, carries its id (made under one of its operation's own
// keys) and says it succeeded, of its amount, on p's PaymentIntent. The
// payer has the money back from then on, and CMPay says so from then on.
// A pending one waits for the event that ends it, or the late check; one
// the payment cannot count is left to the late check, which records it at
// its last read, and once recorded it stays so (succeed_failed_refund),
// unread.
func (s *Service) learnFailedRefund(ctx context.Context, p Payment, id string, amount int64,
	news processor.Refund) error {
	// news carries id: refund_named found the refund by it, a FAILED one
	// having no reference to be found by.
	if news.Reference == "" || p.ProcessorReference == "" {
		return nil
	}
	// Recorded as a duplicate, news is settled on never: no read of it.
	var recorded string
	err := s.store.db().QueryRow(ctx, commonSQL.SQL("duplicate_state"), news.Reference).Scan(&recorded)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sqlq.ErrNoRows) {
		return fmt.Errorf("read the processor's refund %s of refund %s: %w", news.Reference, id, err)
	}
	rec, err := s.readRefundRecord(ctx, p, id, news.Reference)
	if err != nil {
		return err
	}
	if rec.RefundID != id || rec.PaymentReference != p.ProcessorReference ||
		rec.State != processor.RefundSucceeded || rec.AmountMinor != amount {
		return nil
	}
	_, err = s.settleFailedRefund(ctx, p.ID, id, amount, rec, nil)
	return err
}

// readRefundRecord reads refund id's record at payment p's processor, as a
// READ call of the refund's operation.
func (s *Service) readRefundRecord(ctx context.Context, p Payment, id, reference string) (processor.Refund, error) {
	op := operationRow{paymentID: p.ID, operation: OpRefund}
	if err := s.store.db().QueryRow(ctx, commonSQL.SQL("refund_operation"), id).Scan(&op.id, &op.key); err != nil {
		return processor.Refund{}, fmt.Errorf("the operation of refund %s: %w", id, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	rec, err := s.processorNamed(p.Processor).GetRefund(callCtx, reference)
	ierr := s.recordRead(ctx, op, refundOutcome(rec, err), time.Since(start))
	if err != nil {
		return processor.Refund{}, fmt.Errorf("read refund %s at the processor: %w", reference, err)
	}
	if ierr != nil {
		return processor.Refund{}, ierr
	}
	return rec, nil
}

// returnRefund fails refund id of payment paymentID, which had succeeded,
// with the processor's code: its amount is no longer counted refunded, the
// payment's status follows (CAPTURED or PARTIALLY_REFUNDED), and
// PAYMENT_REFUND_FAILED is written under the refund's key. The contract
// has no event of its own for a refund failed after it succeeded; its
// payment's amounts say what changed.
func (s *Service) returnRefund(ctx context.Context, paymentID, id string, amount int64, code string) error {
	now := s.now()
	return s.store.db().Tx(ctx, func(r sqlq.Runner) error {
		n, err := r.Exec(ctx, commonSQL.SQL("fail_succeeded_refund"), id, nullable.String(code), now)
		if err != nil {
			return fmt.Errorf("fail refund %s: %w", id, err)
		}
		if n == 0 {
			return nil // failed already: someone came first
		}
		got, err := scanPayment(r.QueryRow(ctx, commonSQL.SQL("unrefund"), paymentID, amount))
		if errors.Is(err, sqlq.ErrNoRows) {
			return fmt.Errorf("refund %s of %s: the payment does not count its %d refunded", id, paymentID, amount)
		}
		if err != nil {
			return fmt.Errorf("take refund %s off payment %s: %w", id, paymentID, err)
		}
		refund, err := readRefund(ctx, r, id, got)
		if err != nil {
			return err
		}
		return insertEvent(ctx, r, EventRefundFailed, refund.IdempotencyKey, got, refund, now)
	})
}
