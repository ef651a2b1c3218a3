package payments

import (
	"context"
	"iter"
)

// Export yields every payment matching f, newest first, however many there
// are, for a CSV export: the same filter and order as List, so an export
// holds exactly the rows the list pages through. It reads with List itself,
// a keyset page of MaxPageSize at a time, so memory stays at one page
// whatever the total, no statement runs longer than a page's read, and a
// consumer that stops early (a client gone) stops the reading. Payments
// created after the export began come before its first page and are not
// in it.
//
// An error (a bad filter, the database) is yielded once, last.
func (s *Service) Export(ctx context.Context, f Filter) iter.Seq2[Payment, error] {
	return func(yield func(Payment, error) bool) {
		after := ""
		for {
			page, err := s.List(ctx, f, MaxPageSize, after)
			if err != nil {
				yield(Payment{}, err)
				return
			}
			for _, p := range page.Payments {
				if !yield(p, nil) {
					return
				}
			}
			if !page.HasNextPage {
				return
			}
			after = page.EndCursor()
		}
	}
}
