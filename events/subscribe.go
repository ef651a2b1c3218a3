package events

import (
	"context"
	"sync"
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
				batch, err := s.Range(ctx, *cursor, upTo, f, pageSize)
				if err != nil {
					if ctx.Err() == nil {
						sub.fail(err)
					}
					return false
				}
				for _, e := range batch {
					if !send(e) {
						return false
					}
				}
				if len(batch) < pageSize {
					*cursor = upTo
				} else {
					*cursor = batch[len(batch)-1].ID
				}
			}
			return true
		}

		var cursor int64
		if after != nil {
			// Most of a long backlog is read before taking a place in the
			// hub, so that live events do not pile up in the buffer
			// meanwhile.
			cursor = *after
			for {
				last := s.hub.lastID()
				if last-cursor <= pageSize {
					break
				}
				if !backlog(&cursor, last) {
					return
				}
			}
		}
		sb := &subscriber{filter: f, ch: make(chan Event, s.buffer)}
		live, ok := s.hub.add(sb)
		if !ok {
			sub.fail(ErrClosed)
			return
		}
		defer s.hub.remove(sb)
		if after == nil {
			cursor = live
		} else if !backlog(&cursor, live) {
			return
		}
		for {
			select {
			case e, ok := <-sb.ch:
				if !ok {
					sub.fail(sb.err)
					return
				}
				if e.ID <= cursor {
					continue // `after` was past what this instance had seen
				}
				if !send(e) {
					return
				}
				cursor = e.ID
			case <-ctx.Done():
				return
			}
		}
	}()
	return sub
}
