package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/processor"
)

// Duplicates the processor holds. Recovery sends a create or refund again
// under a new key once a consistent read shows the first not done
// (resend.go), but a request Stripe answered 500 is indeterminate: during
// an incident's remediation Stripe may complete it later and send the
// events of what it made. The payer is then charged (or refunded) twice:
// the payment's own reference names one PaymentIntent, and a second one
// carries the same metadata. Nothing CMPay settles changes for it; it is
// found, kept and shown, for staff to put right at the processor:
//
//   - an event about a PaymentIntent (or refund) that names a payment (or
//     refund) of CMPay's whose stored reference is another: the processor's
//     record of it is read, and kept when it moved or may move money;
//   - a recovery read that finds several payments (or refunds) for one
//     operation: it settles on one (settleOnOne, settleOnOneRefund) and, once
//     that one is final, keeps the others;
//   - the late check's read of an operation sent again under a new key,
//     once no earlier key's request can be completed (latecheck.go).
//
// CMPay never refunds a duplicate itself: a mistake in telling one apart
// would move a payer's real money (docs/design/processors.md). A second
// Pix or boleto still waiting for its payer is the exception: it moved no
// money, but its payer could still pay it, so it is recorded and canceled
// at the processor (cancelWaiting), which moves none either.

// FoundBy says what found a duplicate.
const (
	FoundByEvent     = "event"
	FoundByRecovery  = "recovery"
	FoundByLateCheck = "late_check"
)

// Duplicate is a second payment or refund the processor holds for one of
// CMPay's, as the processor stated it when found.
type Duplicate struct {
	// Reference is the processor's id of the duplicate (pi_…, re_…).
	Reference string
	Processor string
	PaymentID string
	// RefundID is CMPay's refund, for a refund's duplicate; else empty.
	RefundID  string
	Operation Operation
	Amount    Money
	// State is the processor's state, in the seam's words (captured,
	// authorized, processing; a refund's succeeded, pending).
	State   string
	FoundBy string
	FoundAt time.Time
	// ownFailed: a refund the processor made of a refund CMPay shows
	// FAILED and could not settle on it (failedRefundMade): the payer got
	// it once, not twice. Only its ERROR line says so; the admin reads the
	// refund's status.
	ownFailed bool
}

// movesMoney says whether a payment in state moved money or may still
// (a duplicate to keep): captured, held for a capture, or in flight.
func movesMoney(state processor.PaymentState) bool {
	return state == processor.PaymentCaptured || state == processor.PaymentAuthorized ||
		state == processor.PaymentProcessing
}

// waiting says whether a payment in state waits for its payer (a Pix or
// boleto not yet paid): no money has moved, but the payer could pay it,
// which would be a second charge: a latent duplicate.
func waiting(state processor.PaymentState) bool {
	return state == processor.PaymentPending
}

// duplicateCancelKey is the idempotency key of the cancel of duplicate
// ref: a function of the duplicate alone, so that every instance and
// every round that finds it sends the same request.
func duplicateCancelKey(ref string) string { return "cmpay_dup_" + ref }

// cancelWaiting cancels at its processor rec, a second payment for
// payment paymentID that waits for its payer (waiting), recorded as a
// duplicate already, so that it can never be paid. Cancelling such an
// intent moves no money whatever the judgment that it is a second one:
// the worst a mistake could do is void a code the payer was shown, and the
// code CMPay shows is its payment's own reference's, which is never
// canceled so. Paid meanwhile (the processor answers it captured), it is
// money moved twice, logged at ERROR for staff to refund (as a later read
// or event that finds it paid logs it: paidSinceRecorded); the record
// keeps the state it was found in.
func (s *Service) cancelWaiting(ctx context.Context, processorName, paymentID string, rec processor.Payment) error {
	start := time.Now()
	res, err := s.processorNamed(processorName).CancelPayment(ctx, processor.CancelRequest{
		IdempotencyKey: duplicateCancelKey(rec.Reference), Reference: rec.Reference})
	s.strayCalled(OpCancel, lateReadOutcome(err), time.Since(start))
	if err != nil {
		return fmt.Errorf("cancel %s, a second payment for %s waiting for its payer: %w", rec.Reference, paymentID, err)
	}
	if movesMoney(res.State) {
		s.log.Error("the processor holds a duplicate: a second payment waiting for its payer was paid before CMPay "+
			"could cancel it; refund it at the processor", "payment", paymentID, "processor", processorName,
			"processor_id", rec.Reference, "state", string(res.State))
		return nil
	}
	s.log.Warn("canceled at the processor a second payment waiting for its payer", "payment", paymentID,
		"processor", processorName, "processor_id", rec.Reference, "state", string(res.State))
	return nil
}

// refundMovesMoney is movesMoney for a refund: succeeded or pending.
func refundMovesMoney(state processor.RefundState) bool {
	return state == processor.RefundSucceeded || state == processor.RefundPending
}

// DuplicatesOf lists the duplicates recorded for payment id, oldest found
// first.
func (s *Service) DuplicatesOf(ctx context.Context, id string) ([]Duplicate, error) {
	out, err := sqlq.Collect(ctx, s.store.db(), commonSQL.SQL("duplicates_of"), []any{id}, func(r sqlq.Row) (Duplicate, error) {
		var d Duplicate
		var refund *string
		var op string
		err := r.Scan(&d.Reference, &d.Processor, &d.PaymentID, &refund, &op, &d.Amount.Minor, &d.Amount.Currency,
			&d.State, &d.FoundBy, &d.FoundAt)
		d.Operation, d.RefundID = Operation(op), deref(refund)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("duplicates of %s: %w", id, err)
	}
	return out, nil
}

// recordDuplicate stores d unless its processor id is stored already; the
// first time, it is logged at ERROR and counted (OnDuplicate), and found
// again paid after it was recorded waiting, logged again
// (paidSinceRecorded).
func (s *Service) recordDuplicate(ctx context.Context, d Duplicate) error {
	var refund *string
	if d.RefundID != "" {
		refund = &d.RefundID
	}
	n, err := s.store.db().Exec(ctx, commonSQL.SQL("insert_duplicate"), d.Reference, d.Processor, d.PaymentID, refund,
		string(d.Operation), d.Amount.Minor, d.Amount.Currency, d.State, d.FoundBy, d.FoundAt.UTC())
	if err != nil {
		return fmt.Errorf("record the processor's duplicate %s of payment %s: %w", d.Reference, d.PaymentID, err)
	}
	if n == 0 { // found before
		return s.paidSinceRecorded(ctx, d)
	}
	msg := "the processor holds a duplicate: money moved twice for one operation; put it right at the processor"
	switch {
	case d.Operation == OpCreate && waiting(processor.PaymentState(d.State)):
		msg = "the processor holds a second payment waiting for its payer for one operation: CMPay cancels it there " +
			"so that it cannot be paid"
	case d.ownFailed:
		msg = "the processor made a refund CMPay marked FAILED: CMPay's refunded amount leaves it out; check it at the processor"
	}
	s.log.Error(msg, "payment", d.PaymentID, "refund", d.RefundID, "operation", string(d.Operation), "processor", d.Processor,
		"processor_id", d.Reference, "amount", d.Amount.String(), "currency", d.Amount.Currency, "state", d.State,
		"found_by", d.FoundBy)
	s.onDuplicate(d.Operation)
	return nil
}

// paidSinceRecorded logs at ERROR, as money moved twice, d found again
// moving money when it was recorded as a second payment waiting for its
// payer: its payer paid it before CMPay's cancel (which failed, or came
// too late), and the record, written once, still shows it waiting. Each
// read or event that finds it so logs it; it was counted when recorded.
func (s *Service) paidSinceRecorded(ctx context.Context, d Duplicate) error {
	if d.Operation != OpCreate || !movesMoney(processor.PaymentState(d.State)) {
		return nil
	}
	var recorded string
	if err := s.store.db().QueryRow(ctx, commonSQL.SQL("duplicate_state"), d.Reference).Scan(&recorded); err != nil {
		return fmt.Errorf("read the processor's duplicate %s of payment %s: %w", d.Reference, d.PaymentID, err)
	}
	if !waiting(processor.PaymentState(recorded)) {
		return nil
	}
	s.log.Error("the processor holds a duplicate: money moved twice for one operation (a second payment recorded "+
		"waiting for its payer was paid before CMPay canceled it); put it right at the processor",
		"payment", d.PaymentID, "operation", string(d.Operation), "processor", d.Processor, "processor_id", d.Reference,
		"amount", d.Amount.String(), "currency", d.Amount.Currency, "state", d.State, "recorded", recorded,
		"found_by", d.FoundBy)
	return nil
}

// paymentDuplicate is rec, a payment the processor made for payment
// paymentID's create besides the one it settled on, as a Duplicate found
// by foundBy.
func (s *Service) paymentDuplicate(paymentID, processorName string, rec processor.Payment, foundBy string) Duplicate {
	return Duplicate{Reference: rec.Reference, Processor: processorName, PaymentID: paymentID, Operation: OpCreate,
		Amount: Money{Minor: rec.AmountMinor, Currency: rec.Currency}, State: string(rec.State), FoundBy: foundBy,
		FoundAt: s.now()}
}

// strayEvent looks at what event ev, naming payment p, says of payments
// and refunds other than p's own, and records those that are duplicates.
// It says whether ev is about another PaymentIntent than p's (a stray),
// which then has nothing else to apply to p. A PaymentIntent is never a
// duplicate while p's reference is unknown (a create whose answer was
// lost may have made it: it is p's own, which recovery settles). A stray
// that could not be read is an error, but the others are still looked at,
// and the answer still says whether ev is a stray, so that the caller can
// apply what ev says of p's own.
func (s *Service) strayEvent(ctx context.Context, p Payment, ev processor.Event) (bool, error) {
	refundsErr := s.strayRefunds(ctx, p, ev)
	if ev.Payment == nil || ev.Payment.Reference == "" || p.ProcessorReference == "" ||
		ev.Payment.Reference == p.ProcessorReference {
		return false, refundsErr
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The event is news, not the record: the record says what the
	// PaymentIntent is now, and that it names p.
	start := time.Now()
	rec, err := s.processorNamed(p.Processor).GetPayment(callCtx, ev.Payment.Reference)
	s.strayCalled(OpCreate, createOutcome(rec, err), time.Since(start))
	if err != nil {
		return true, errors.Join(refundsErr,
			fmt.Errorf("read %s, another payment at the processor for %s: %w", ev.Payment.Reference, p.ID, err))
	}
	if rec.PaymentID != p.ID || rec.Reference == p.ProcessorReference || !movesMoney(rec.State) {
		return true, refundsErr
	}
	return true, errors.Join(refundsErr, s.recordDuplicate(ctx, s.paymentDuplicate(p.ID, p.Processor, rec, FoundByEvent)))
}

// strayRefunds records the refunds event ev carries that name one of
// CMPay's refunds of p whose stored reference is another refund, when the
// processor's record of them shows money moved or moving. A refund whose
// reference is not known yet is left alone, as a payment's is: one that
// carries its id is its own, which recovery settles, or, for a refund
// FAILED without a reference, learnFailedRefund. One that cannot be read
// is an error, joined with the others'; the rest are still looked at.
func (s *Service) strayRefunds(ctx context.Context, p Payment, ev processor.Event) error {
	var errs []error
	for _, news := range eventRefunds(ev) {
		if news.RefundID == "" || news.Reference == "" {
			continue
		}
		errs = append(errs, s.strayRefund(ctx, p, news))
	}
	return errors.Join(errs...)
}

// strayRefund records news, a refund an event about p carries, when it
// names one of CMPay's refunds whose stored reference is another refund
// and the processor's record of it shows money moved or moving.
func (s *Service) strayRefund(ctx context.Context, p Payment, news processor.Refund) error {
	var ref *string
	err := s.store.db().QueryRow(ctx, commonSQL.SQL("refund_reference"), news.RefundID).Scan(&ref)
	if errors.Is(err, sqlq.ErrNoRows) || err == nil && (ref == nil || *ref == "" || *ref == news.Reference) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read refund %s: %w", news.RefundID, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	rec, err := s.processorNamed(p.Processor).GetRefund(callCtx, news.Reference)
	s.strayCalled(OpRefund, refundOutcome(rec, err), time.Since(start))
	if err != nil {
		return fmt.Errorf("read %s, another refund at the processor for %s: %w", news.Reference, news.RefundID, err)
	}
	if rec.RefundID != news.RefundID || rec.PaymentReference != p.ProcessorReference || !refundMovesMoney(rec.State) {
		return nil
	}
	return s.recordDuplicate(ctx, s.refundDuplicate(p.ID, p.Processor, rec, FoundByEvent))
}

// refundDuplicate is rec, a refund the processor made for CMPay's refund
// besides the one it settled on, as a Duplicate found by foundBy.
func (s *Service) refundDuplicate(paymentID, processorName string, rec processor.Refund, foundBy string) Duplicate {
	return Duplicate{Reference: rec.Reference, Processor: processorName, PaymentID: paymentID, RefundID: rec.RefundID,
		Operation: OpRefund, Amount: Money{Minor: rec.AmountMinor, Currency: rec.Currency}, State: string(rec.State),
		FoundBy: foundBy, FoundAt: s.now()}
}

// settleOnOne is what the payments found for op, a create, came to: the
// one that went furthest (chosenFound), else none found. More than one
// that moved money is money moved twice: every other one found that moved
// or may move money, or waits for its payer (then canceled there:
// cancelWaiting), is recorded as a duplicate once the one chosen settles
// op. While it does not (still processing), nothing is recorded:
// the next read, by another way (search, then a list) or in another
// order, may choose another, and would settle on one recorded here.
func (s *Service) settleOnOne(ctx context.Context, op operationRow, found []processor.Payment) (outcome, error) {
	one := chosenFound(found)
	if one < 0 {
		return noneFound(), nil
	}
	out := readOutcome(createOutcome(found[one], nil), nil)
	if !out.settled {
		return out, nil
	}
	for i, rec := range found {
		if i == one || rec.PaymentID != op.paymentID || !movesMoney(rec.State) && !waiting(rec.State) {
			continue
		}
		if err := s.recordDuplicate(ctx, s.paymentDuplicate(op.paymentID, op.processor, rec, FoundByRecovery)); err != nil {
			return outcome{}, err
		}
		if waiting(rec.State) {
			// A cancel that fails does not hold up settling the create:
			// the late check reads the payment again, and cancels it then.
			if err := s.cancelWaiting(ctx, op.processor, op.paymentID, rec); err != nil {
				s.log.Warn("a second payment waiting for its payer was not canceled; the late check tries again",
					"payment", op.paymentID, "processor_id", rec.Reference, "error", err.Error())
			}
		}
	}
	return out, nil
}

// chosenFound is the index of the payment found that settleOnOne settles
// on: the first of those that went furthest (captured, then authorized,
// processing, waiting for the payer or for an action, canceled or expired,
// declined); -1 for none. Settled on a canceled one while another was
// captured, the payment would be CANCELED and its real charge shown as a
// second one.
func chosenFound(found []processor.Payment) int {
	return firstFurthest(found, func(processor.Payment) bool { return true },
		func(res processor.Payment) int { return paymentRank(res.State) })
}

// firstFurthest is the index of the first of those in xs that keep admits
// with the highest rank; -1 for none (chosenFound, settleOnOneRefund).
func firstFurthest[T any](xs []T, keep func(T) bool, rank func(T) int) int {
	one := -1
	for i, x := range xs {
		if keep(x) && (one < 0 || rank(x) > rank(xs[one])) {
			one = i
		}
	}
	return one
}

// paymentRank orders a payment's states by how far it went: chosenFound.
func paymentRank(state processor.PaymentState) int {
	switch state {
	case processor.PaymentCaptured:
		return 5
	case processor.PaymentAuthorized:
		return 4
	case processor.PaymentProcessing:
		return 3
	case processor.PaymentPending, processor.PaymentRequiresAction:
		return 2
	case processor.PaymentCanceled, processor.PaymentExpired:
		return 1
	}
	return 0
}

// settleOnOneRefund is the refund among all (a payment's refunds at the
// processor) that op, a refund, settles on: of those that carry its refund
// id, the first succeeded, else the first pending, else the first (a
// failed one). Settled on a failed refund while another succeeded, the
// refund would be FAILED and its amount released though the payer had it
// back. Once the one chosen is final, every other one carrying the id that
// moved or may move money is recorded as a duplicate; while it is pending
// the next read chooses again, so nothing is recorded yet. Not ok when
// none carries the id.
func (s *Service) settleOnOneRefund(ctx context.Context, op operationRow, all []processor.Refund) (processor.Refund, bool, error) {
	one := firstFurthest(all, func(res processor.Refund) bool { return res.RefundID == *op.refundID },
		func(res processor.Refund) int { return refundRank(res.State) })
	if one < 0 {
		return processor.Refund{}, false, nil
	}
	if !refundOutcome(all[one], nil).settled {
		return all[one], true, nil
	}
	for i, res := range all {
		if i == one || res.RefundID != *op.refundID || !refundMovesMoney(res.State) {
			continue
		}
		if err := s.recordDuplicate(ctx, s.refundDuplicate(op.paymentID, op.processor, res, FoundByRecovery)); err != nil {
			return all[one], true, err
		}
	}
	return all[one], true, nil
}

// refundRank orders a refund's states by how surely it moved money:
// succeeded, then pending, then any other (failed, canceled).
func refundRank(state processor.RefundState) int {
	switch state {
	case processor.RefundSucceeded:
		return 2
	case processor.RefundPending:
		return 1
	}
	return 0
}
