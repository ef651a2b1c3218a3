package payments

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// Sending again under a new key. Stripe stores the answer of a request
// that started executing, a 500 included, and gives it again for 24 hours
// to every request with its key: asking again with the key cannot settle
// such an operation. A replayed 500 says that the key's request has ended,
// so what it did is in the processor's records: recovery reads them
// (nextStored), and where a consistent read shows that the operation did
// not happen, it gives the operation a new key and sends it again. The new
// key is stored before it is sent, on the condition that the key is still
// the one read under and the lease still this instance's, so every
// instance and every later recovery sends the same one; keys follow from
// the operation's id ("cmpay_op_…", then "cmpay_op_…_a2", "_a3"), so even
// two instances that both judged it would send one. A refund whose key is
// a day old goes the same way without a stored error, once its last send
// under the old key is ten minutes old (recovery.go, atRest), since no
// request under a key a day old is still running. So does a capture or
// cancel whose key the processor first saw with other parameters
// (changeOutcome): a second one cannot move money, whatever the first does.
//
// A create a day old is the exception: like any create stored longer ago
// than its processor keeps a key (tooLateToCharge), it is never sent again,
// so no card is charged a day after its payer paid; found, it settles;
// found nowhere once its sends have ended, it is declined (dayold.go). A
// new key's own age counts from when it was stored (key_since): a refund
// whose new key's send got no answer is asked again under it, however old
// the refund.
//
// Safe for each operation: a capture or cancel the processor already did
// answers the payment's state (Stripe refuses a second one; the connector
// reads the refusal as the state); a refund is sent again only when the
// payment's list of refunds, which is consistent, holds none with its id,
// and a refusal of it is taken only once that list, read again, still
// holds none (refusedResend); a create only when a consistent list of the
// processor's payments by creation time holds none with its payment's id
// (readCreate), and its stored error was first seen longer ago than
// search's lag (mayResend). A create sent again and declined is not read
// again: search lags, and a payment charged by an earlier key meanwhile is
// a second charge of a declined payment, which the late check records.

// keyAttempt is what separates a key's attempt number from its
// operation's key: "cmpay_op_…_a2".
const keyAttempt = "_a"

// nextKey is the key op is sent under after its current one.
func nextKey(op operationRow) string {
	base := opKey(op.id)
	n := 1
	if rest, ok := strings.CutPrefix(op.key, base+keyAttempt); ok {
		if v, err := strconv.Atoi(rest); err == nil {
			n = v
		}
	}
	return fmt.Sprintf("%s%s%d", base, keyAttempt, n+1)
}

// sendAgain records the read (out) that showed the leased op not done (its
// key's answer a stored error, or a refund's key a day old and at rest),
// stores op's next key in the same transaction, and sends op under it.
// Nothing is sent when the key changed or the lease was lost meanwhile:
// someone else resolves it; nor when storing the key took so long that too
// little of the new lease is left for the send (leasedCall): the next claim
// sends under the new key.
func (s *Service) sendAgain(ctx context.Context, op operationRow, p Payment, out outcome, took time.Duration) error {
	s.called(op, callRead, out, took)
	key, now := nextKey(op), s.now()
	var changed int64
	err := s.store.db().Tx(ctx, func(r sqlq.Runner) error {
		if err := insertCall(ctx, r, op, callRead, out, now, took); err != nil {
			return err
		}
		n, err := r.Exec(ctx, commonSQL.SQL("rekey_operation"), op.id, op.key, key, s.instance,
			now.Add(s.timeout+leaseMargin), now)
		changed = n
		if err != nil {
			return fmt.Errorf("store the operation's next key: %w", err)
		}
		return nil
	})
	if s.leaseSet != nil {
		s.leaseSet()
	}
	if err != nil || changed == 0 {
		return err
	}
	callCtx, cancel, ok := s.leasedCall(ctx, op, now)
	if !ok {
		return nil // the new key is stored: a later claim sends under it
	}
	defer cancel()
	s.sentAgainLog(op, key)
	op.key, op.lastError = key, nil
	start := time.Now()
	out = s.send(callCtx, op, p)
	return s.recordSend(ctx, callCtx, op, p, out, time.Since(start))
}

// recordSend records recovery's send of op, of payment p, that came to
// out and took took. A refund sent under a new key and refused is first
// read again (refusedResend), within callCtx, what is left of the send's
// lease.
func (s *Service) recordSend(ctx, callCtx context.Context, op operationRow, p Payment, out outcome, took time.Duration) error {
	if !refusedResend(op, out) {
		_, err := s.record(ctx, op, out, callWrite, took)
		return err
	}
	start := time.Now()
	read, err := s.listRefund(callCtx, op, p)
	readTook := time.Since(start)
	if err != nil {
		return s.recordRefusedUnsettled(ctx, op, out, took, read, readTook, err)
	}
	if read.absent {
		// None carries its id: the refusal is the processor's word on it.
		if _, err := s.record(ctx, op, out, callWrite, took); err != nil {
			return err
		}
		return s.recordCall(ctx, op, callRead, read, readTook)
	}
	// The send stands as it was answered, settling nothing: recovery asks
	// again under the key (the processor answers the refusal again, and
	// the list is read again) unless the read settles it.
	held := out
	held.settled, held.opState, held.status, held.next = false, "", "", ""
	if _, err := s.record(ctx, op, held, callWrite, took); err != nil {
		return err
	}
	if read.found == "" {
		return s.recordCall(ctx, op, callRead, read, readTook) // the read failed
	}
	_, err = s.record(ctx, op, read, callRead, readTook)
	return err
}

// recordRefusedUnsettled records a refused send of op under a new key
// whose read (read, which found a refund carrying op's refund id) could
// not record a duplicate beside that refund (dupErr): the send, settling
// nothing, then the read. The send is left to be read again (nextRead),
// not asked again: the list still holds the refund carrying its id, so
// the next round's read settles op on it and records the duplicate, and
// nothing is sent again, under this key or a new one. Unrecorded, the
// send would leave op as rekeyed, to be sent once more.
func (s *Service) recordRefusedUnsettled(ctx context.Context, op operationRow, out outcome, took time.Duration,
	read outcome, readTook time.Duration, dupErr error) error {
	held := out
	held.settled, held.opState, held.status, held.next = false, "", "", nextRead
	if _, err := s.record(ctx, op, held, callWrite, took); err != nil {
		return errors.Join(dupErr, err)
	}
	return errors.Join(dupErr, s.recordCall(ctx, op, callRead, read, readTook))
}

// refusedResend says whether out, the answer to a send of op, is a refusal
// of a refund sent under a new key (attempt 2 or later), which by itself
// does not say that the refund did not happen: the request under an
// earlier key, shown not done by the list of refunds before the new key was
// sent, may have been completed since (Stripe rolls a request whose answer
// was a 500 forward), and the new key's refund is then refused because the
// charge is refunded already. The list read again (listRefund) settles it:
// a refund carrying its id settles it as recovery's read would, and only
// when none does is the refusal the processor's word on the refund. Its
// send under its first key is not so read: nothing earlier could have
// refunded it.
func refusedResend(op operationRow, out outcome) bool {
	return op.operation == OpRefund && op.key != opKey(op.id) && out.settled && out.opState == opRefused
}

// recordCall writes one call of op that settles nothing and leaves op as
// it stands: a read made after the send that op's record came from.
func (s *Service) recordCall(ctx context.Context, op operationRow, kind string, out outcome, took time.Duration) error {
	s.called(op, kind, out, took)
	return withStatementTimeout(ctx, func(ctx context.Context) error {
		return insertCall(ctx, s.store.db(), op, kind, out, s.now(), took)
	})
}
