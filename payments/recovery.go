package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/processor"
)

// Recovery. An operation whose outcome is unknown (no answer within
// PROCESSOR_TIMEOUT, a 5xx, a 409, ...), or whose request died before
// settling it, stays unsettled with a next_try_at. Every instance runs a
// Recoverer, which claims the due ones with a lease the database grants
// (claim_due: one UPDATE ... RETURNING; PostgreSQL skips the rows another
// instance is claiming, SQLite has one writer), and resolves each: asks
// again with the same key, or reads the processor's record where asking
// again cannot settle it, and after a stored error (a replayed 500), or for
// a refund whose key is a day old, sends it again under a new key where a
// consistent read shows it not done (resend.go). Only the processor's word
// settles an operation; anything else postpones it by
// PROCESSOR_RECOVERY_AFTER, except a stored error answered to a send, whose
// read is due at once.

const (
	// recoverBatch is how many due operations one claim takes.
	recoverBatch = 16
	// recoverAtOnce is how many of a claim's operations are resolved at
	// once. One at a time, the backlog a processor's outage leaves (each
	// call up to PROCESSOR_TIMEOUT) took longer to clear than the contract
	// gives recovery once the processor answers again; at once, the
	// processor sees at most this many of an instance's recovery calls.
	recoverAtOnce = 8
)

// RecoverDue resolves the operations due now, each once, and says how many
// it claimed. The Recoverer calls it on a timer; tests call it directly.
// It first logs the counts of the processor calls' lines sampled in an
// interval that has ended (calllog.go).
func (s *Service) RecoverDue(ctx context.Context) (int, error) {
	s.calls.Flush()
	now := s.now()
	ids, err := s.store.claimDue(ctx, s.instance, now.Add(s.timeout+leaseMargin), now, recoverBatch, s.processorNames())
	if err != nil {
		return 0, fmt.Errorf("claim due processor operations: %w", err)
	}
	return len(ids), atOnce(ids, recoverAtOnce, "operation", func(id string) error { return s.resolve(ctx, id) })
}

// atOnce runs do for each id, at most limit at a time, and joins their
// errors, each named by what and its id: one failure must not keep the
// others of a claim from being worked on, nor hide their failures.
func atOnce(ids []string, limit int, what string, do func(id string) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, limit)
	for _, id := range ids {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := do(id); err != nil {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, fmt.Errorf("%s %s: %w", what, id, err))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resolve makes the calls for the leased operation id and records them:
// one send or read, or after a stored error up to three (a create's
// search and list, then a send under a new key); a refund's send under a
// new key that is refused is followed by a read (recordSend). The lease
// is renewed before any call: it was claimed with the batch, and the calls
// of the operations before it may have used up its time; one another
// instance has taken over since is left to it. The renewal stamps a send
// before it starts (last_send_at), which a day-old create's decline waits
// for (dayold.go) even if this instance dies before recording the send.
// The calls end before the renewed lease does (leasedCall); when the
// renewal left too little of it, none is made.
func (s *Service) resolve(ctx context.Context, id string) error {
	op, err := scanOperation(s.store.db().QueryRow(ctx, commonSQL.SQL("read_operation"), id))
	if err != nil {
		return fmt.Errorf("read operation: %w", err)
	}
	mode := deref(op.lastError)
	readAt := s.now()
	read := mode == nextRead || mode == nextStored || s.keyForgotten(op) || s.tooLateToCharge(op)
	var sendAt *time.Time
	if !read {
		sendAt = &readAt
	}
	renewed, err := s.store.db().Exec(ctx, commonSQL.SQL("renew_lease"), id, s.instance,
		readAt.Add(s.timeout+leaseMargin), sendAt)
	if err != nil {
		return fmt.Errorf("renew the lease: %w", err)
	}
	if s.leaseSet != nil {
		s.leaseSet()
	}
	if renewed == 0 {
		return nil
	}
	p, ok, err := s.store.readPayment(ctx, op.paymentID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("its payment %s is missing", op.paymentID)
	}
	callCtx, cancel, ok := s.leasedCall(ctx, op, readAt)
	if !ok {
		return nil // left to a later claim, once the lease has run out
	}
	defer cancel()
	start := time.Now()
	if mode == nextStored && op.storedAt == nil {
		op.storedAt = &readAt // stored before stored_at was kept: seen now
	}
	out, err := s.ask(callCtx, op, p, read, mode == nextStored)
	if err != nil {
		return err
	}
	// A refund whose key is a day old goes on under a new key as after a
	// stored error, once no send under its old key can still be running.
	dayOldRefund := mode != nextStored && op.operation == OpRefund && s.keyForgotten(op)
	if out.absent && dayOldRefund {
		if out.absent, err = s.atRest(ctx, op, readAt); err != nil {
			return err
		}
	}
	if out.absent && (mode == nextStored || dayOldRefund) && s.mayResend(op, readAt) {
		return s.sendAgain(ctx, op, p, out, time.Since(start))
	}
	if mode == nextStored && out.next == nextRead {
		out.next = nextStored // a read that proved nothing: the key's answer is still stored
	}
	if !read {
		return s.recordSend(ctx, callCtx, op, p, out, time.Since(start))
	}
	_, err = s.record(ctx, op, out, callRead, time.Since(start))
	return err
}

// leasedCall is the context of the processor calls made under a lease
// whose end was set from leasedAt (leasedAt + PROCESSOR_TIMEOUT +
// leaseMargin): it ends at leasedAt + PROCESSOR_TIMEOUT, so no call
// outlives the lease, however long the statement that set it waited (for
// SQLite's write lock, a row lock, a slow database), and another instance
// that claims the operation once the lease ends never finds a call of this
// one still running. Not ok, with nothing to cancel, when less than half of
// PROCESSOR_TIMEOUT is left (minCallTime); that is logged and counted
// (OnLeaseLate: an operator alerts on the metric), since an operation
// whose lease always takes that long to set is never asked.
func (s *Service) leasedCall(ctx context.Context, op operationRow, leasedAt time.Time) (context.Context, context.CancelFunc, bool) {
	left := s.callTime(leasedAt)
	if left < s.minCallTime() {
		s.leaseLateLog(op, left)
		s.onLeaseLate(op.operation)
		return nil, nil, false
	}
	callCtx, cancel := context.WithTimeout(ctx, left)
	return callCtx, cancel, true
}

// callTime is how long a call made under a lease set at leasedAt may take:
// what is left of PROCESSOR_TIMEOUT since then, so that it ends leaseMargin
// before the lease (leasedAt + PROCESSOR_TIMEOUT + leaseMargin) however long
// the statement that set it waited. A request asks at once, whatever is
// left: a call cut short is an unknown outcome, which recovery resolves
// under the same key. Never more than PROCESSOR_TIMEOUT: the clock (the wall
// clock plus the database's offset, clock.go) may step back between the two
// readings, and a call given the step too would outlive its lease by it.
func (s *Service) callTime(leasedAt time.Time) time.Duration {
	return min(s.timeout, leasedAt.Add(s.timeout).Sub(s.now()))
}

// minCallTime is the least time left on a lease for which recovery still
// calls the processor under it: half of PROCESSOR_TIMEOUT. The timeout is
// what a call may take, far more than one usually does; a database so slow
// that setting the lease took the other half is likely to stall the
// call's record too, and a call cut short proves nothing while it counts
// as one more send of unknown outcome. Making no call costs one lease's
// time: the operation stays due, and the next claim after the lease ends
// (on any instance) asks with the whole timeout.
func (s *Service) minCallTime() time.Duration { return s.timeout / 2 }

// ask makes op's call: a read of the processor's record (read; stored
// when its key's answer is a stored error), else a send with its key.
func (s *Service) ask(ctx context.Context, op operationRow, p Payment, read, stored bool) (outcome, error) {
	switch {
	case !read:
		return s.send(ctx, op, p), nil
	case op.operation != OpCreate:
		return s.readChange(ctx, op, p)
	}
	return s.readCreate(ctx, op, p, stored)
}

// send sends op, of payment p, with its key: a create with its stored
// request, a change with p's reference at the processor.
func (s *Service) send(ctx context.Context, op operationRow, p Payment) outcome {
	if op.operation == OpCreate {
		return s.sendCreate(ctx, op)
	}
	return s.sendChange(ctx, op, p.ProcessorReference, p.Amount.Currency)
}

// sendCreate sends op, a create, again with its key and its stored request.
func (s *Service) sendCreate(ctx context.Context, op operationRow) outcome {
	res, err := s.processorNamed(op.processor).CreatePayment(ctx, processor.CreatePaymentRequest{IdempotencyKey: op.key,
		PaymentID: op.paymentID, AmountMinor: op.amountMinor, Currency: op.currency,
		Method: processor.Method(op.request.Method), PaymentMethodToken: op.request.Token,
		Capture: op.request.Capture, Attempt: op.sends})
	return createOutcome(res, err)
}

// keyMargin is how long before a processor forgets a key recovery stops
// sending it: a clock's skew and the call's own time fit well within it.
const keyMargin = time.Hour

// keyForgotten says whether op's current key may be past the time its
// processor remembers it (Stripe: 24 hours from the key's first send:
// keySince, else createdAt), when sending a create or a refund again with
// it would be a new request that moves money again. Such an operation is
// read, never sent with that key: found, it settles. A refund not found in
// its payment's list of refunds, which is consistent, was not made once no
// request under its key can still be running (atRest): it is sent under a
// new key (resend.go), as the merchant asked. A create not found is sent
// again only after a stored error and while still in time
// (tooLateToCharge); past that, it is declined once a consistent list shows
// it never made (dayold.go). A capture or cancel is safe to send again (the
// connector reads an intent already captured or canceled as the answer).
func (s *Service) keyForgotten(op operationRow) bool {
	life, ok := s.keyLifetime(op)
	if !ok || op.operation == OpCapture || op.operation == OpCancel {
		return false
	}
	since := op.createdAt
	if op.keySince != nil {
		since = *op.keySince
	}
	return s.now().Sub(since) > life-keyMargin
}

// restAfter is how long after its last send under a key an operation's
// request under it is taken to have ended, whatever Stripe made of it: far
// past any request's time at Stripe.
const restAfter = 10 * time.Minute

// atRest says whether op was last sent under its current key longer ago
// than restAfter (or never), so that a consistent read showing it not
// done cannot be overtaken by a request still running under that key. The
// last send is the later of the recorded ones and op's stamp, written
// before each send starts (last_send_at): a send whose instance died
// before recording it may still be running at the processor.
func (s *Service) atRest(ctx context.Context, op operationRow, now time.Time) (bool, error) {
	last, err := s.lastSent(ctx, op, commonSQL.SQL("last_write_under_key"), op.key)
	if err != nil {
		return false, err
	}
	return last.IsZero() || now.Sub(last) > restAfter, nil
}

// lastSent is the later of op's stamp (last_send_at) and its last send
// that query (last_write_under_key, last_write_of_operation; run with op's
// payment and id, then args) finds recorded; zero when neither is.
func (s *Service) lastSent(ctx context.Context, op operationRow, query string, args ...any) (time.Time, error) {
	var recorded time.Time
	err := s.store.db().QueryRow(ctx, query, append([]any{op.paymentID, op.id}, args...)...).Scan(&recorded)
	if err != nil && !errors.Is(err, sqlq.ErrNoRows) {
		return time.Time{}, fmt.Errorf("read the operation's last send: %w", err)
	}
	if op.lastSendAt != nil {
		recorded = later(recorded, *op.lastSendAt)
	}
	return recorded, nil
}

// tooLateToCharge says whether op is a create stored longer ago than its
// processor keeps a key, under any key: it is then only read, never sent,
// so no card is charged a day after its payer paid.
func (s *Service) tooLateToCharge(op operationRow) bool {
	life, ok := s.keyLifetime(op)
	return ok && op.operation == OpCreate && s.now().Sub(op.createdAt) > life-keyMargin
}

// keyLifetime is how long op's processor remembers a key; not ok when it
// does not say, or op's creation time is not known.
func (s *Service) keyLifetime(op operationRow) (time.Duration, bool) {
	kl, ok := s.processorNamed(op.processor).(interface{ KeyLifetime() time.Duration })
	if !ok || op.createdAt.IsZero() {
		return 0, false
	}
	return kl.KeyLifetime(), true
}

// mayResend says whether op, which a consistent read made at readAt showed
// not done while its key's answer is a stored error (or, for a refund,
// while its key is a day old: atRest decides besides), is sent again under
// a new key now: a capture, cancel or refund at once; a create only while
// it may still charge, and once search has caught up with every send of its
// key (the search lag). Otherwise it is read again later. Search matches
// the payment's id whatever its date, so it shows a payment the list's
// window missed because the clocks differ by more than listMargin.
func (s *Service) mayResend(op operationRow, readAt time.Time) bool {
	if op.operation != OpCreate {
		return true
	}
	return !s.tooLateToCharge(op) && readAt.Sub(*op.storedAt) >= s.searchLag
}

// readCreate reads the processor's record of a create: by its reference
// when known, else by a search for the payment's id, where finding nothing
// proves nothing (the search lags). A record not found, or not final,
// leaves the operation to be read again. When the key's answer is a stored
// error (stored), a search that finds nothing is followed by a consistent
// list (listCreated), whose finding nothing proves that no payment was
// made. A create too late to be sent again is listed instead once none of
// its sends can still be running or missing from search, and declined if
// the list holds nothing (readDayOld).
func (s *Service) readCreate(ctx context.Context, op operationRow, p Payment, stored bool) (outcome, error) {
	proc := s.processorNamed(op.processor)
	if p.ProcessorReference != "" {
		res, err := proc.GetPayment(ctx, p.ProcessorReference)
		return readOutcome(createOutcome(res, err), err), nil
	}
	found, err := proc.FindPayments(ctx, op.paymentID)
	if err != nil {
		return readOutcome(errorOutcome(err), err), nil
	}
	switch {
	case len(found) > 0:
	case s.tooLateToCharge(op):
		return s.readDayOld(ctx, op)
	case stored:
		return s.listCreated(ctx, op)
	}
	return s.settleOnOne(ctx, op, found)
}

// noneFound is a read that found no record of the operation: it is read
// again later, and by itself proves nothing (a search lags; a consistent
// list's caller sets absent).
func noneFound() outcome {
	return outcome{call: CallError, next: nextRead, code: "none_found"}
}

// listMargin widens the window of a create's list of payments on both
// sides: the processor's clock may differ from CMPay's, so its record of
// a payment may be dated before the operation was stored.
const listMargin = 15 * time.Minute

// listCreated looks for op's payment in the processor's consistent list of
// the payments made from when op was stored until its current key's stored
// error was first seen (storedAt, set by resolve): every key op was sent
// under had ended by then (each has a stored answer), so no payment of op
// is dated later, and an empty list means that none made one: absent. The
// window is fixed once seen, so later rounds do not page through every
// payment the account makes meanwhile.
func (s *Service) listCreated(ctx context.Context, op operationRow) (outcome, error) {
	lister, ok := s.processorNamed(op.processor).(processor.CreatedLister)
	if !ok || op.createdAt.IsZero() || op.storedAt == nil {
		return noneFound(), nil
	}
	found, err := s.listCreatedBetween(ctx, lister, op, op.createdAt.Add(-listMargin), op.storedAt.Add(listMargin))
	if err != nil {
		return readOutcome(errorOutcome(err), err), nil
	}
	out, err := s.settleOnOne(ctx, op, found)
	out.absent = len(found) == 0
	return out, err
}

// readChange reads the processor's record of a capture's or cancel's
// payment, or of a refund: by its reference when known, else among the
// payment's refunds by CMPay's refund id.
func (s *Service) readChange(ctx context.Context, op operationRow, p Payment) (outcome, error) {
	proc := s.processorNamed(op.processor)
	if op.operation != OpRefund {
		res, err := proc.GetPayment(ctx, p.ProcessorReference)
		out := readOutcome(changeOutcome(op.operation, res, err), err)
		// Still only authorized: the capture or cancel did not happen.
		out.absent = err == nil && res.State == processor.PaymentAuthorized
		return out, nil
	}
	var ref *string
	if err := s.store.db().QueryRow(ctx, commonSQL.SQL("refund_reference"), *op.refundID).Scan(&ref); err != nil {
		return outcome{}, fmt.Errorf("read refund %s: %w", *op.refundID, err)
	}
	if ref != nil {
		res, err := proc.GetRefund(ctx, *ref)
		return readOutcome(refundOutcome(res, err), err), nil
	}
	return s.listRefund(ctx, op, p)
}

// listRefund reads op, a refund of payment p, from the processor's list
// of p's refunds: the one carrying its refund id that settleOnOneRefund
// chooses, else none found and absent, since the list is consistent
// (unlike search): no refund in it is none made. Read so by recovery, and
// after a refusal of a refund sent again under a new key (resend.go).
func (s *Service) listRefund(ctx context.Context, op operationRow, p Payment) (outcome, error) {
	all, err := s.processorNamed(op.processor).ListRefunds(ctx, p.ProcessorReference)
	if err != nil {
		return readOutcome(errorOutcome(err), err), nil
	}
	if res, ok, err := s.settleOnOneRefund(ctx, op, all); err != nil || ok {
		return readOutcome(refundOutcome(res, nil), nil), err
	}
	out := noneFound()
	out.absent = true
	return out, nil
}

// readOutcome is what a read came to: a record settles the operation as a
// write's answer would, but an error of the read never does (a decline of
// a read does not exist; not found proves nothing), and the operation is
// read again next time unless reading is unsupported.
func readOutcome(o outcome, err error) outcome {
	if err == nil {
		if !o.settled {
			o.next = "read"
		}
		return o
	}
	o.settled = false
	o.next = "read"
	var pe *processor.Error
	if errors.As(err, &pe) && pe.Kind == processor.KindUnsupported {
		o.next = "" // the processor keeps no records: ask again instead
	}
	return o
}

// Recoverer is the background service, on every instance, that resolves
// this Service's due operations every interval (zero: a tenth of
// PROCESSOR_RECOVERY_AFTER, at most 5 s), claiming batch after batch while
// they come full, and then reads one batch of old authorizations
// (authcheck.go) and one of operations sent again under a new key whose
// earlier keys can no longer be completed (latecheck.go).
func (s *Service) Recoverer(interval time.Duration, log *slog.Logger) *startstop.Runner {
	if interval <= 0 {
		interval = min(s.recoveryAfter/10, 5*time.Second)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	recovering := &logrepeat.Failures{Logger: log, What: "processor recovery"}
	checking := &logrepeat.Failures{Logger: log, What: "reading old authorizations"}
	lateChecking := &logrepeat.Failures{Logger: log, What: "checking resent operations for late completions"}
	return startstop.Every(max(interval, 10*time.Millisecond), func(ctx context.Context) {
		var errs []error
		for {
			n, err := s.RecoverDue(ctx)
			errs = append(errs, err)
			if n < recoverBatch || ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() == nil {
			recovering.Report(errors.Join(errs...))
		}
		s.checkAuthorizationsRound(ctx, checking) // authcheck.go
		s.checkLateRound(ctx, lateChecking)       // latecheck.go
	})
}

// OpenUnknown counts the processor operations whose outcome is unknown
// and not yet resolved, on every instance (the metrics' gauge).
func (s *Service) OpenUnknown(ctx context.Context) (int64, error) {
	var n int64
	err := s.store.db().QueryRow(ctx, commonSQL.SQL("count_unknown")).Scan(&n)
	if err != nil && !errors.Is(err, sqlq.ErrNoRows) {
		return 0, fmt.Errorf("count unknown processor operations: %w", err)
	}
	return n, nil
}
