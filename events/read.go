package events

import (
	"context"

	"github.com/cmpay/cmpay/internal/storable"
)

// window is how many ids one read covers at most.
const window = 1000

// page reads the numbered events that match f with after < id <= upTo,
// oldest first, covering at most window ids: it returns them and the id
// it read up to (upTo, or sooner).
func (s *Service) page(ctx context.Context, after, upTo int64, f Filter) ([]Event, int64, error) {
	end := min(upTo, after+window)
	if end <= after {
		return nil, after, nil
	}
	if !storable.Text(f.ClientID) || !storable.Text(f.PaymentID) {
		// No event has such an id, and PostgreSQL would refuse it in a
		// query with an error rather than find nothing.
		return nil, end, nil
	}
	out, err := s.store.numbered(ctx, after, end, f)
	if err != nil {
		return nil, after, err
	}
	return out, end, nil
}

// Since reads up to limit numbered events that match f after the id
// after, oldest first.
func (s *Service) Since(ctx context.Context, after int64, f Filter, limit int) ([]Event, error) {
	top, err := s.maxID(ctx)
	if err != nil {
		return nil, err
	}
	var out []Event
	for after < top && len(out) < limit {
		batch, reached, err := s.page(ctx, after, top, f)
		if err != nil {
			return nil, err
		}
		out = append(out, batch...)
		after = reached
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// BySeq reads events by their outbox seq, for the webhook dispatcher,
// which knows each event's id from its delivery; the events it returns
// carry no id. Missing ones (swept) are left out.
func (s *Service) BySeq(ctx context.Context, seqs []int64) (map[int64]Event, error) {
	if len(seqs) == 0 {
		return map[int64]Event{}, nil
	}
	return s.store.bySeq(ctx, seqs)
}

// maxID is the highest id given so far (0 when none).
func (s *Service) maxID(ctx context.Context) (int64, error) { return s.store.lastID(ctx) }
