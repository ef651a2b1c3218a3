package events

import (
	"context"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/logrepeat"
)

// hub hands the events this instance learns of to its subscribers. It is
// the only reader of new events on the instance: however many subscribers
// there are, each new event is read from the database once.
type hub struct {
	s *Service

	mu     sync.Mutex
	last   int64 // every event up to last has been handed out
	subs   map[*subscriber]struct{}
	closed bool

	// poke asks the hub to look for new events.
	poke chan struct{}
	// told is the newest id the sequencer announced and not yet handed
	// out, and deliveries whether its passes created webhook deliveries:
	// an announced id spares the hub asking the database for the newest.
	told       int64
	deliveries bool
}

// subscriber is one subscription's place in the hub.
type subscriber struct {
	filter Filter
	// ch is bounded: when it is full the hub drops the subscriber (closes
	// ch with err set) rather than wait for it. It carries pointers to the
	// events the hub read, shared by every subscriber and never changed:
	// a buffer of values would cost each subscription its buffer's size
	// times an event's (about 80 KB), allocated up front.
	ch  chan *Event
	err error
}

func newHub(s *Service, last int64) *hub {
	return &hub{s: s, last: last, subs: map[*subscriber]struct{}{}, poke: make(chan struct{}, 1)}
}

// wakeUp asks the hub to look for new events; it never blocks.
func (h *hub) wakeUp() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// announce tells the hub that events up to top are numbered (and visible),
// and whether webhook deliveries were created with them; it never blocks.
func (h *hub) announce(top int64, deliveries bool) {
	h.mu.Lock()
	h.told = max(h.told, top)
	h.deliveries = h.deliveries || deliveries
	h.mu.Unlock()
	h.wakeUp()
}

func (h *hub) lastID() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// run looks for new events whenever poked, and every poll interval besides.
func (h *hub) run(ctx context.Context) {
	tick := time.NewTicker(h.s.poll)
	defer tick.Stop()
	fails := &logrepeat.Failures{Logger: h.s.log, What: "events: read new events"}
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.poke:
		case <-tick.C:
		}
		if err := h.catchUp(ctx); ctx.Err() == nil {
			fails.Report(err)
		}
	}
}

// catchUp hands out every event past last. With no subscriber it only
// moves last to the newest id, without reading the events: the check and
// the move are one critical section, so a subscriber that registers
// meanwhile is either counted here, or registers after the move and starts
// from the new last.
func (h *hub) catchUp(ctx context.Context) error {
	h.mu.Lock()
	newest, deliveries := h.told, h.deliveries
	h.told, h.deliveries = 0, false
	h.mu.Unlock()
	if deliveries {
		defer h.s.tellListeners()
	}
	if newest == 0 {
		// Not told (a poll, or a reconnection): ask.
		var err error
		if newest, err = h.s.maxID(ctx); err != nil {
			return err
		}
	}
	h.mu.Lock()
	from := h.last
	if newest <= from {
		h.mu.Unlock()
		return nil
	}
	if len(h.subs) == 0 {
		h.last = newest
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	// Only this goroutine moves last once there are subscribers, so from
	// stays right while the events are read outside the lock.
	for from < newest {
		batch, reached, err := h.s.page(ctx, from, newest, Filter{})
		if err != nil {
			return err
		}
		h.mu.Lock()
		for i := range batch {
			h.broadcast(&batch[i])
		}
		from = reached
		h.last = from
		h.mu.Unlock()
	}
	return nil
}

// broadcast gives e to every subscriber it matches, taking those whose
// buffer is full off the list (they catch up from the outbox). h.mu is
// held.
func (h *hub) broadcast(e *Event) {
	for sub := range h.subs {
		if !sub.filter.match(e) {
			continue
		}
		select {
		case sub.ch <- e:
		default:
			h.dropLocked(sub, errBehind)
		}
	}
}

func (h *hub) dropLocked(sub *subscriber, err error) {
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	sub.err = err
	close(sub.ch)
}

// add registers sub and returns the id after which its live events start:
// sub receives every matching event with a greater id. After shutdown it
// returns false.
func (h *hub) add(sub *subscriber) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, false
	}
	h.subs[sub] = struct{}{}
	return h.last, true
}

// size is how many subscribers are registered.
func (h *hub) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// remove unregisters sub (a subscription that ended on its own).
func (h *hub) remove(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		close(sub.ch)
	}
}

// closeAll ends every subscription with err (shutdown).
func (h *hub) closeAll(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		h.dropLocked(sub, err)
	}
}
