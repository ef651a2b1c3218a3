package events

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Subscription is a stream of events, oldest first, each once.
type Subscription struct {
	// C carries the events; it is closed when the subscription ends.
	C <-chan Event

	mu  sync.Mutex
	err error
}

// Err says why C was closed: nil when the subscriber's context ended,
// ErrTooSlow, ErrClosed, or a database error. Call it once C is closed.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Subscribe streams the numbered events that match f until ctx ends. With
// after nil it starts with the events numbered from now on; with after set,
// it first sends every matching event after that id from the outbox, then
// the live ones, with no gap between the two and no event twice.
//
// How: a subscription reads the outbox on its own until it is close to the
// hub's last id, then registers with the hub, which answers with its last
// id L; from then on the hub hands it every event past L, and it reads the
// few events up to L from the outbox. Since the hub hands out events in id
// order and ids are given in one sequence that readers see as a prefix,
// "up to L from the outbox, then past L from the hub" is every event once.
//
// The hub never waits for a subscriber: one whose buffer is full is taken
// off the live list (a burst of events, or a reader slower than the
// events). The subscription then catches up from the outbox, where it
// stands, and registers again, unless it has fallen more than MaxLag
// events behind: then it ends with ErrTooSlow, and the client resumes with
// `after`. Memory stays bounded either way: the buffer, and a page.
//
// Every read of the outbox, a replay from `after` or a catch-up, is paced
// by the instance's replay budget (see replayBudget): however many
// subscriptions replay at once, they hold ReplayPages pages between them
// and read ReplayRate events a second.
func (s *Service) Subscribe(ctx context.Context, f Filter, after *int64) *Subscription {
	out := make(chan Event)
	sub := &Subscription{C: out}
	go func() {
		defer close(out)
		send := func(e Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		// backlog sends the matching events after *cursor up to upTo and
		// moves *cursor to upTo.
		backlog := func(cursor *int64, upTo int64) bool {
			for *cursor < upTo {
				if !s.replayPage(ctx, f, cursor, upTo, out, sub) {
					return false
				}
			}
			return true
		}

		var cursor int64
		if after != nil {
			cursor = *after
		}
		for first := true; ; first = false {
			if !first || after != nil {
				// Most of a long backlog is read before taking a place in
				// the hub, so that live events do not pile up meanwhile.
				for {
					last := s.hub.lastID()
					if last-cursor <= int64(s.buffer/2) {
						break
					}
					if !first && last-cursor > int64(s.maxLag) {
						sub.fail(ErrTooSlow) // fell behind live, and stays behind
						return
					}
					if !backlog(&cursor, min(last, cursor+window)) {
						return
					}
				}
			}
			sb := &subscriber{filter: f, ch: make(chan *Event, s.buffer)}
			live, ok := s.hub.add(sb)
			if !ok {
				sub.fail(ErrClosed)
				return
			}
			if first && after == nil {
				cursor = live
			} else if !backlog(&cursor, live) {
				s.hub.remove(sb)
				return
			}
			if !s.follow(ctx, sb, &cursor, send, sub) {
				return
			}
		}
	}()
	return sub
}

// replayPage sends one page of the outbox, the events that match f after
// *cursor up to upTo (at most window ids), and moves *cursor past it. It
// holds one of the instance's replay slots from the read until the last
// event is taken, and pays for the page from the replay budget before
// sending it; a subscriber that does not take the page within the budget's
// stall time ends with ErrTooSlow. False: the subscription ended.
func (s *Service) replayPage(ctx context.Context, f Filter, cursor *int64, upTo int64, out chan<- Event, sub *Subscription) bool {
	release, ok := s.replay.acquire(ctx, f.ClientID)
	if !ok {
		return false
	}
	defer release()
	batch, reached, err := s.page(ctx, *cursor, upTo, f)
	if err != nil {
		if ctx.Err() == nil {
			sub.fail(err)
		}
		return false
	}
	if !s.replay.pay(ctx, len(batch)) {
		return false
	}
	stall := time.NewTimer(s.replay.stall)
	defer stall.Stop()
	for i := range batch {
		batch[i].Following = len(batch) - 1 - i
	}
	for _, e := range batch {
		select {
		case out <- e:
		case <-ctx.Done():
			return false
		case <-stall.C:
			sub.fail(ErrTooSlow)
			return false
		}
	}
	*cursor = reached
	return true
}

// CheckAfter refuses, as bad input, an `after` beyond the newest event:
// no event has that id yet, so it cannot be an id this API returned, and a
// subscription from it would skip every event up to it.
func (s *Service) CheckAfter(ctx context.Context, after int64) error {
	if after <= s.hub.lastID() {
		return nil
	}
	// This instance's hub may lag the database by a poll: ask it.
	newest, err := s.maxID(ctx)
	if err != nil {
		return err
	}
	if after > newest {
		return afterError("after is beyond the newest event: use an event id this API returned")
	}
	return nil
}

// follow sends sb's live events until the hub takes sb off its list for
// falling behind (true: catch up and register again), or the subscription
// ends (false).
func (s *Service) follow(ctx context.Context, sb *subscriber, cursor *int64, send func(Event) bool, sub *Subscription) bool {
	defer s.hub.remove(sb)
	for {
		select {
		case e, ok := <-sb.ch:
			if !ok {
				if errors.Is(sb.err, errBehind) {
					return true
				}
				sub.fail(sb.err)
				return false
			}
			if e.ID <= *cursor {
				continue // `after` was past what this instance had seen
			}
			// The events already waiting behind e go out right after it: a
			// receiver may take them with e and read what they show together,
			// as it does a page of a replay. e is shared with other
			// subscribers: the count goes on a copy.
			ev := *e
			ev.Following = len(sb.ch)
			if !send(ev) {
				return false
			}
			*cursor = e.ID
		case <-ctx.Done():
			return false
		}
	}
}
