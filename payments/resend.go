package payments

import (
	"context"
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
// payment's list of refunds, which is consistent, holds none with its id; a
// create only when a consistent list of the processor's payments by
// creation time holds none with its payment's id (readCreate), and its
// stored error was first seen longer ago than search's lag (mayResend).

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
	_, err = s.record(ctx, op, out, callWrite, time.Since(start))
	return err
}
