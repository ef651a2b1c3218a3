package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/startstop"
	"github.com/cmpay/cmpay/processor"
)

// Pix and boleto are paid by the payer after they are created: the create
// settles PENDING with a next action, and the payment becomes CAPTURED
// when the payer pays, or EXPIRED when no one did in time. CMPay learns it
// from the processor: an event (ApplyProcessorEvent), the sandbox's payer
// (PaySandbox), or a read when an event is late (the Poller). Every path
// applies what the processor's record says, through one conditional update
// from PENDING, so repeated, late or out-of-order news cannot move a
// payment twice or back.

// ErrPaymentNotKnown is what ApplyProcessorEvent answers for an event whose
// payment's create is still unsettled (its answer not recorded yet): the
// event is to be applied again later.
var ErrPaymentNotKnown = errors.New("the event's payment is not recorded yet")

// AsyncState is what a Pix or boleto payment adds to a payment: what the
// payer does, and when it was paid or expired.
type AsyncState struct {
	NextAction *NextAction
	PaidAt     time.Time
	ExpiredAt  time.Time
}

// AsyncStateOf reads payment id's next action and times; the zero
// AsyncState for a payment that has none (a card payment).
func (s *Service) AsyncStateOf(ctx context.Context, id string) (AsyncState, error) {
	var typ, pix, boleto, url *string
	var expires, paid, expired *time.Time
	err := s.store.db().QueryRow(ctx, commonSQL.SQL("async_state"), id).Scan(&typ, &pix, &boleto, &url, &expires, &paid, &expired)
	if errors.Is(err, sqlq.ErrNoRows) {
		return AsyncState{}, fmt.Errorf("payment %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return AsyncState{}, fmt.Errorf("read payment %s's next action: %w", id, err)
	}
	return asyncState(typ, pix, boleto, url, expires, paid, expired), nil
}

// ApplyProcessorEvent applies an event the processor posted to the payment
// it names. The event is news, not the record: the payment's unsettled
// operations are made due for recovery, which settles them on the
// processor's word; a PENDING payment is read from the processor and
// settled as the record says; what the processor changed after CMPay had
// settled (learned.go) is read and applied. An event about a payment still
// PROCESSING answers ErrPaymentNotKnown, to be applied again later. A
// PaymentIntent or refund an event carries that names the payment (by its
// metadata) but is not its own is never applied to it: it is read, and
// recorded as a duplicate at the processor when it moved or may move money
// (duplicates.go); what the event says of the payment's own refunds is
// still applied. An event whose object CMPay does not act on (a
// dispute), or that names no payment of CMPay's, is applied as nothing: a
// payment's row is stored before the processor is asked, so one that is
// not there now never will be (the account's other payments, other event
// types).
func (s *Service) ApplyProcessorEvent(ctx context.Context, ev processor.Event) error {
	if ev.Other {
		return nil // an object CMPay does not act on (a dispute)
	}
	id := ""
	if ev.Payment != nil {
		id = ev.Payment.PaymentID
	}
	if id == "" && ev.PaymentReference != "" {
		var err error
		id, err = s.lookup(ctx, "payment_of_reference", "processor reference", ev.PaymentReference)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if id == "" {
		return nil // not about a payment of CMPay's
	}
	p, ok, err := s.store.readPayment(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return nil // not about a payment of CMPay's
	}
	// About another payment or refund at the processor than p's own: a
	// duplicate to record (duplicates.go), never applied to p. A stray
	// refund that could not be read does not hold up what the event says
	// of p's own intent and refunds: that is applied now, and the error
	// leaves the event to be applied again, which reads the stray again
	// and changes p no further (every update below is conditional).
	stray, strayErr := s.strayEvent(ctx, p, ev)
	if stray {
		return strayErr
	}
	return errors.Join(strayErr, s.applyOwnNews(ctx, p, ev))
}

// applyOwnNews applies what event ev says of payment p's own intent and
// refunds (ApplyProcessorEvent).
func (s *Service) applyOwnNews(ctx context.Context, p Payment, ev processor.Event) error {
	// Only a payment with work in flight has operations to wake: the rest
	// (most events, about payments long settled) cost no write here.
	if p.Status == StatusProcessing || p.PendingOperation != "" || p.Reserved.Minor > 0 {
		if _, err := s.store.db().Exec(ctx, commonSQL.SQL("wake_operations"), p.ID, s.now()); err != nil {
			return fmt.Errorf("wake payment %s's operations: %w", p.ID, err)
		}
	}
	switch p.Status {
	case StatusProcessing:
		return ErrPaymentNotKnown
	case StatusPending:
		_, err := s.settlePending(ctx, p, nil)
		return err
	}
	return s.learnFromEvent(ctx, p, ev)
}

// settlePending settles a PENDING payment as the processor's record says:
// rec when the caller has it (the sandbox's payer), else read now. A record
// still pending only notes that it was read. It answers the payment as it
// then is.
func (s *Service) settlePending(ctx context.Context, p Payment, rec *processor.Payment) (Payment, error) {
	if rec == nil {
		got, err := s.readRecord(ctx, p)
		if err != nil {
			return p, err
		}
		rec = &got
	}
	now := s.now()
	var stmt string
	var typ EventType
	switch rec.State {
	case processor.PaymentCaptured:
		stmt, typ = commonSQL.SQL("settle_paid"), EventCaptured
	case processor.PaymentExpired, processor.PaymentCanceled:
		stmt, typ = commonSQL.SQL("settle_expired"), EventExpired
	default:
		_, err := s.store.db().Exec(ctx, commonSQL.SQL("touch_pending"), p.ID, now)
		return p, err
	}
	out := p
	err := s.store.db().Tx(ctx, func(r sqlq.Runner) error {
		got, err := scanPayment(r.QueryRow(ctx, stmt, p.ID, now))
		if errors.Is(err, sqlq.ErrNoRows) { // no longer PENDING: someone settled it first
			var ok bool
			out, ok, err = readPayment(ctx, r, p.ID)
			if err == nil && !ok {
				err = fmt.Errorf("payment %s: %w", p.ID, ErrNotFound)
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("settle pending payment %s: %w", p.ID, err)
		}
		out = got
		return insertEvent(ctx, r, typ, got.IdempotencyKey, got, nil, now)
	})
	return out, err
}

// readRecord reads payment p's record at the processor, as a READ call of
// its create operation.
func (s *Service) readRecord(ctx context.Context, p Payment) (processor.Payment, error) {
	op := operationRow{paymentID: p.ID, operation: OpCreate}
	if err := s.store.db().QueryRow(ctx, commonSQL.SQL("create_operation_of"), p.ID).Scan(&op.id, &op.key); err != nil {
		return processor.Payment{}, fmt.Errorf("the create operation of %s: %w", p.ID, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	rec, err := s.processorNamed(p.Processor).GetPayment(callCtx, p.ProcessorReference)
	ierr := s.recordRead(ctx, op, createOutcome(rec, err), time.Since(start))
	if err != nil {
		return processor.Payment{}, fmt.Errorf("read %s at the processor: %w", p.ProcessorReference, err)
	}
	if ierr != nil {
		return processor.Payment{}, ierr
	}
	return rec, nil
}

// recordRead counts and stores a READ call of op that came to out, made
// outside recovery (readRecord, readRefundRecord); a failed call is
// recorded too.
func (s *Service) recordRead(ctx context.Context, op operationRow, out outcome, took time.Duration) error {
	s.called(op, callRead, out, took)
	if err := insertCall(ctx, s.store.db(), op, callRead, out, s.now(), took); err != nil {
		return fmt.Errorf("record a processor read: %w", err)
	}
	return nil
}

// paysLater says whether Pix and boleto are paid by their payer after the
// create (Stripe; the sandbox with SANDBOX_METHODS=async) rather than at
// once (the sandbox by default, as before processors).
func (s *Service) paysLater() bool {
	if sb, ok := s.proc.(interface{ PaysLater() bool }); ok {
		return sb.PaysLater()
	}
	return true
}

// sandboxPayer is the sandbox's stand-in for a payer (processor/sandbox).
type sandboxPayer interface {
	Pay(ctx context.Context, reference string) (processor.Payment, error)
}

// ErrNotSandbox: PaySandbox with another processor than the sandbox.
var ErrNotSandbox = errors.New("only the sandbox can be paid by CMPay itself")

// PaySandbox pays a PENDING sandbox Pix or boleto as its payer would (POST
// /sandbox/payments/{id}/pay): CAPTURED, with PAYMENT_CAPTURED. A payment
// that is not PENDING is a StateConflictError; one past its expiry is
// settled EXPIRED and answered as a StateConflictError too.
func (s *Service) PaySandbox(ctx context.Context, id string) (Payment, error) {
	payer, ok := s.proc.(sandboxPayer)
	if !ok {
		return Payment{}, ErrNotSandbox
	}
	p, err := s.Get(ctx, id)
	if err != nil {
		return Payment{}, err
	}
	if p.Status != StatusPending || p.Processor != processor.NameSandbox {
		return Payment{}, &StateConflictError{Operation: OpCapture, Status: p.Status}
	}
	rec, err := payer.Pay(ctx, p.ProcessorReference)
	if err != nil {
		var pe *processor.Error
		if errors.As(err, &pe) && pe.Refused() { // expired: the record says so
			if p, err = s.settlePending(ctx, p, nil); err != nil {
				return Payment{}, err
			}
			return Payment{}, &StateConflictError{Operation: OpCapture, Status: p.Status}
		}
		return Payment{}, fmt.Errorf("pay sandbox payment %s: %w", id, err)
	}
	return s.settlePending(ctx, p, &rec)
}

// expiredPollEvery is how often a payment past its expiry that the
// processor still says is pending is read again; the first read comes at
// once after the expiry (pending_due).
const expiredPollEvery = time.Minute

// PollPending reads from the processor up to limit PENDING payments that
// are past their expiry or have had no news for pollAfter, and settles
// each as its record says; it returns how many it read. No event is needed
// for correctness: a lost one costs at most pollAfter.
func (s *Service) PollPending(ctx context.Context, pollAfter time.Duration, limit int) (int, error) {
	now, names := s.now(), s.processorNames()
	ids, err := sqlq.Collect(ctx, s.store.db(), commonSQL.SQL("pending_due"),
		[]any{now, now.Add(-pollAfter), limit, now.Add(-min(pollAfter, expiredPollEvery)), names[0], names[1]},
		func(r sqlq.Row) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
	if err != nil {
		return 0, fmt.Errorf("find pending payments to read: %w", err)
	}
	var errs []error
	for _, id := range ids {
		p, ok, err := s.store.readPayment(ctx, id)
		if err == nil && !ok {
			err = ErrNotFound
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pending payment %s: %w", id, err))
			continue
		}
		if _, err := s.settlePending(ctx, p, nil); err != nil {
			errs = append(errs, err)
		}
	}
	return len(ids), errors.Join(errs...)
}

// pollBatch is how many pending payments one PollPending reads.
const pollBatch = 32

// Poller is the background service, on every instance, that settles this
// Service's pending payments whose news is late (PROCESSOR_POLL_AFTER:
// pollAfter); interval zero means a tenth of pollAfter, at most 5 s.
// Instances may read the same payment at once; the conditional update
// settles it once.
func (s *Service) Poller(pollAfter, interval time.Duration, log *slog.Logger) *startstop.Runner {
	if interval <= 0 {
		interval = min(pollAfter/10, 5*time.Second)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fails := &logrepeat.Failures{Logger: log, What: "polling pending payments"}
	return startstop.Every(max(interval, 10*time.Millisecond), func(ctx context.Context) {
		if _, err := s.PollPending(ctx, pollAfter, pollBatch); ctx.Err() == nil {
			fails.Report(err)
		}
	})
}
