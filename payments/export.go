package payments

import (
	"context"
	"fmt"
	"iter"

	"gorm.io/gorm"
)

// exportPageSize is how many payments one statement of Export reads: ten
// List pages, so a million rows take a thousand short statements rather
// than ten thousand, and a page in memory is about 300 KB.
// (A variable only so that this package's tests walk several pages over a
// few hundred payments: exportpage_test.go.)
var exportPageSize = 1000

// Export yields every payment matching f, newest first, however many there
// are, for the admin's CSV export: the same filter and page statement as
// List (listingOf, listing.page; TestExportMatchesList walks both over
// every filter), so an export holds exactly the rows the list pages
// through. It reads from Config.Reads' Reader, one database for the whole
// export.
//
// It reads keyset pages of exportPageSize on (created_at, id), each a short
// statement of its own, read whole and the connection returned before its
// rows are yielded: memory stays at one page whatever the total, no
// transaction or snapshot is held for the length of a download, and a slow
// client holds no connection. A consumer that stops (a client gone) stops
// the reading. Payments created after the export began come before its
// first page and are not in it.
//
// An error (a bad filter, the database) is yielded once, last.
func (s *Service) Export(ctx context.Context, f Filter) iter.Seq2[Payment, error] {
	return func(yield func(Payment, error) bool) {
		l, err := listingOf(f)
		if err != nil {
			yield(Payment{}, err)
			return
		}
		// One database for the whole export: a replica while it is fit
		// (an export may be a few seconds stale), never half from each.
		db := s.reads.Reader()
		var after *position
		for {
			page, err := s.exportPage(ctx, db, l.page(after, exportPageSize))
			if err != nil {
				yield(Payment{}, err)
				return
			}
			for _, p := range page {
				if !yield(p, nil) {
					return
				}
			}
			if len(page) < exportPageSize {
				return
			}
			last := page[len(page)-1]
			after = &position{at: last.CreatedAt, id: last.ID}
		}
	}
}

// exportPage reads one page of an export. Each page is bounded like any
// read: the export as a whole is not (it streams every payment), but it
// stops when the database does.
func (s *Service) exportPage(ctx context.Context, db *gorm.DB, q pageQuery) ([]Payment, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	page, err := s.readPage(ctx, db, q)
	if err != nil {
		return nil, fmt.Errorf("export payments: %w", err)
	}
	return page, nil
}
