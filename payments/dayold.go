package payments

import (
	"context"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// A create a day old that the processor never made. Such a create is never
// sent again (tooLateToCharge), so no send of it can start any more: once
// every send it had has ended and shows in the processor's search, a
// consistent list of the processor's payments by creation time that holds
// none with the payment's id is the processor's word that the payment did
// not happen, and it is declined (DeclineNotCreated), as any decline: its
// event, its call, its key bound to it. Waiting instead would leave it
// PROCESSING for good (every instance down for a day, an outage longer
// than a day, a stored 500 a day old), with nothing left to wait for.

// DeclineNotCreated is the decline code of a create that the processor
// never made: a day after it was stored, when no send of it can still be
// running, neither the processor's search nor its consistent list by
// creation time holds a payment with its id. No money moved; a new try
// needs a new idempotency key.
const DeclineNotCreated = "not_created"

// readDayOld is readCreate's end for op, a create too late to be sent again
// (tooLateToCharge) that search did not find. Once no send of op can still
// be running or be missing from search (sendsSettled), it lists the
// processor's payments created from when op was stored until its last
// send, recorded or only begun, had surely ended; none with its id
// declines it (DeclineNotCreated), one settles it as found. Before that,
// or without such a list, it is read again later.
func (s *Service) readDayOld(ctx context.Context, op operationRow) (outcome, error) {
	lister, ok := s.processorNamed(op.processor).(processor.CreatedLister)
	if !ok {
		return noneFound(), nil
	}
	lastWrite, err := s.lastWrite(ctx, op)
	if err != nil {
		return outcome{}, err
	}
	if !s.sendsSettled(op, lastWrite, s.now()) {
		return noneFound(), nil
	}
	// Every payment of op is dated before its last send had ended
	// (restAfter), give or take the clocks' difference (listMargin).
	found, err := s.listCreatedBetween(ctx, lister, op, op.createdAt.Add(-listMargin),
		lastWrite.Add(restAfter+listMargin))
	if err != nil {
		return readOutcome(errorOutcome(err), err), nil
	}
	if len(found) > 0 {
		return s.settleOnOne(ctx, op, found)
	}
	return outcome{settled: true, opState: opDeclined, status: StatusDeclined, code: DeclineNotCreated,
		call: CallDeclined}, nil
}

// sendsSettled says whether, at now, every send of op, a create too late
// to charge, has ended at the processor and shows in its search. No send
// starts once op is too late to charge (tooLateToCharge, checked before
// each; a send after a stored error follows its read, within the
// timeout), and none started later than lastWrite, which counts the stamp
// written before each send as well as the sends recorded after they
// returned; each ends within restAfter. The list's window, up to
// lastWrite, so covers a send whose instance died before recording it,
// without waiting on search, which can lag far longer than the search lag
// in an outage; the search lag is still waited for a send search shows.
func (s *Service) sendsSettled(op operationRow, lastWrite, now time.Time) bool {
	life, ok := s.keyLifetime(op)
	if !ok {
		return false
	}
	lastStart := later(op.createdAt.Add(life-keyMargin+s.timeout), lastWrite)
	return now.Sub(lastStart) >= restAfter+s.searchLag
}

// lastWrite is when op was last sent, under any of its keys: the later of
// its stamp, written before each send starts (last_send_at), and its last
// recorded send; op's creation when neither is (a row from before the
// stamp was kept, whose request sent it at once and may have died before
// recording it).
func (s *Service) lastWrite(ctx context.Context, op operationRow) (time.Time, error) {
	last, err := s.lastSent(ctx, op, commonSQL.SQL("last_write_of_operation"))
	if err != nil {
		return time.Time{}, err
	}
	return later(op.createdAt, last), nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
