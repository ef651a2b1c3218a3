package payments

import (
	"context"
	"sync"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// Lists that go on where they failed. A create's list of the processor's
// payments by creation time (listCreated, readDayOld) may take many pages;
// when one fails, the next round goes on from that page rather than from
// the first: under 15 % faults a list started over each round took minutes
// to get through. A list read to its end that found nothing is kept too,
// and answers the rounds that wait out the search lag before sending
// again. How far each
// list came is kept in memory, by operation, for the key and window it was
// made for: another instance, or this one after a restart, starts the list
// again, which costs pages and never a wrong answer (processor.ListWalk
// says why a kept walk stays right).

const (
	// walkKeep is how long a list is kept to go on from, or answer from.
	walkKeep = time.Hour
	// walksKept bounds how many are kept at once; past it, a list starts
	// again next round.
	walksKept = 1024
)

// listWalks are the lists of created payments read in part or whole, by
// operation id.
type listWalks struct {
	mu sync.Mutex
	m  map[string]keptWalk
}

// keptWalk is one list, with what it was made for.
type keptWalk struct {
	key      string
	from, to time.Time
	walk     processor.ListWalk
	at       time.Time
}

// take is the walk to list op's window from..to with: the one kept for
// them, if any (it is no longer kept), else a new one.
func (w *listWalks) take(op operationRow, from, to time.Time) *processor.ListWalk {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.m[op.id]
	delete(w.m, op.id)
	if !ok || k.key != op.key || !k.from.Equal(from) || !k.to.Equal(to) || time.Since(k.at) > walkKeep {
		return &processor.ListWalk{}
	}
	return &k.walk
}

// keep keeps walk, which listed op's window from..to (to its end, or
// until a page failed), for the next round. A list read to its end that
// found the payment is not kept: what the processor holds of it may move
// on (processing, then succeeded), and the next round reads it afresh.
func (w *listWalks) keep(op operationRow, from, to time.Time, walk *processor.ListWalk) {
	if walk.Done && len(walk.Found) > 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]keptWalk{}
	}
	for id, k := range w.m {
		if time.Since(k.at) > walkKeep {
			delete(w.m, id)
		}
	}
	if len(w.m) < walksKept {
		w.m[op.id] = keptWalk{key: op.key, from: from, to: to, walk: *walk, at: time.Now()}
	}
}

// listCreatedBetween lists op's payments made between from and to at
// lister, going on from where the last list of that window stopped. The
// payments an earlier round's pages found are read again once the list
// ends: their state there is as old as that round (an authorization may
// have been canceled since), and the list's answer settles op.
func (s *Service) listCreatedBetween(ctx context.Context, lister processor.CreatedLister, op operationRow, from, to time.Time) ([]processor.Payment, error) {
	walk := s.walks.take(op, from, to)
	earlier := len(walk.Found)
	found, err := lister.ListPaymentsCreated(ctx, op.paymentID, from, to, walk)
	s.walks.keep(op, from, to, walk)
	if err != nil {
		return found, err
	}
	proc := s.processorNamed(op.processor)
	for i := range found[:earlier] {
		if found[i], err = proc.GetPayment(ctx, found[i].Reference); err != nil {
			return nil, err
		}
	}
	return found, nil
}
