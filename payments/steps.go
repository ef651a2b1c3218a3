package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/storable"
)

// The steps both stores take alike, each one statement of sql/common.sql
// on a sqlq.Runner: the pool, or a transaction.

// plausibleID reports whether id could be one this API issued. Anything
// else is NOT_FOUND without asking the database, which would refuse bytes
// it cannot store (see storable.Text) with an error rather than find nothing.
func plausibleID(id string) bool {
	return id != "" && len(id) <= 40 && storable.Text(id)
}

// readPayment reads one payment; ok is false when no payment has the id.
func readPayment(ctx context.Context, r sqlq.Runner, id string) (p Payment, ok bool, err error) {
	if !plausibleID(id) {
		return Payment{}, false, nil
	}
	p, err = scanPayment(r.QueryRow(ctx, commonSQL.SQL("read_payment"), id))
	if errors.Is(err, sqlq.ErrNoRows) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, fmt.Errorf("read payment: %w", err)
	}
	return p, true, nil
}

// readRefund reads refund id of payment p, which must exist: a key names
// it.
func readRefund(ctx context.Context, r sqlq.Runner, id string, p Payment) (*Refund, error) {
	ref, err := scanRefund(r.QueryRow(ctx, commonSQL.SQL("read_refund"), id), p.Amount.Currency)
	if errors.Is(err, sqlq.ErrNoRows) {
		return nil, fmt.Errorf("refund %s of the key's payment %s is missing", id, p.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("read refund: %w", err)
	}
	return &ref, nil
}

// forgetKey deletes a key found past its TTL, unless a request renewed it
// meanwhile (sql/common.sql, forget_key).
func forgetKey(ctx context.Context, r sqlq.Runner, id int64, expiredBefore time.Time) error {
	if _, err := r.Exec(ctx, commonSQL.SQL("forget_key"), id, expiredBefore); err != nil {
		return fmt.Errorf("forget expired key: %w", err)
	}
	return nil
}

// createdPayment is the payment a create makes at now: captured, or only
// authorized when the request asked so. Both stores write exactly this,
// so the answer is built here rather than read back from the database.
func createdPayment(cmd *command, now time.Time) Payment {
	pl := cmd.planned()
	zero := Money{Currency: cmd.amount.Currency}
	p := Payment{
		ID: cmd.newID, ClientID: cmd.clientID, IdempotencyKey: cmd.key, Amount: cmd.amount, Method: cmd.method,
		CreatedAt: now, Status: pl.status, Captured: zero, Refunded: zero, Reserved: zero,
		Processor: pl.processor, ProcessorReference: deref(pl.reference), DeclineCode: deref(pl.declineCode),
		PaymentMethodToken: cmd.token,
	}
	if p.Status == StatusCaptured {
		p.Captured, p.CapturedAt = cmd.amount, now
	}
	return p
}

// notBefore is when a replay or rejection of the held key happened: now,
// or just after the key's first use if that is later. now is read before
// the request reaches the database; one that waited while another request
// used the key and committed would otherwise be recorded before the use it
// replays (the batch statements' "counted_attempt" and "replayed_attempt"
// do the same).
func notBefore(now time.Time, held *heldKey) time.Time {
	if held == nil {
		return now
	}
	if after := held.createdAt.Add(time.Microsecond); after.After(now) {
		return after.UTC()
	}
	return now
}

// record is an attempt the engine decided and a store records: a replay
// or a rejection of a held key, or a refusal by the lifecycle's rules.
type record struct {
	cmd       *command
	outcome   Outcome // OutcomeReplayed, OutcomeRejected or OutcomeRefused
	paymentID string
	held      *heldKey // a replay's or a rejection's
	refused   error    // a refusal's
	now       time.Time
}

// attempt is the attempt row of r: its time (notBefore), and what its
// outcome keeps of the held key or the refusal.
func (r record) attempt() (at time.Time, heldParams *string, refusal string, refundID *string, err error) {
	switch r.outcome {
	case OutcomeReplayed:
		if r.held.refundID != "" {
			refundID = &r.held.refundID
		}
	case OutcomeRejected:
		p := r.held.params.encode()
		heldParams = &p
	case OutcomeRefused:
		refusal = refusalCode(r.refused)
	default:
		return time.Time{}, nil, "", nil, fmt.Errorf("record attempt: unexpected outcome %s", r.outcome)
	}
	return notBefore(r.now, r.held), heldParams, refusal, refundID, nil
}

// answer is the answer to r's request once recorded, with the payment as
// it is now.
func (r record) answer(p Payment, refund *Refund) answer {
	return answer{kind: answerSettled, outcome: r.outcome, payment: p, refund: refund, held: r.held, refused: r.refused}
}

// errPaymentMissing: a held key or a refused request names a payment that
// is not there, which only a damaged database can do.
var errPaymentMissing = errors.New("record attempt: the payment is missing")
