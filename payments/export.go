package payments

import (
	"context"
	"fmt"
	"iter"
	"time"

	"gorm.io/gorm"
)

// exportPageSize is how many payments one statement of Export reads: ten
// List pages, so a million rows take a thousand short statements rather
// than ten thousand, and a page in memory is about 300 KB.
const exportPageSize = 1000

// Export yields every payment matching f, newest first, however many there
// are, for the admin's CSV export: the same filter and page query as List
// (filterConditions, pageQuery; TestExportMatchesList walks both over every
// filter), so an export holds exactly the rows the list pages through. It
// reads from Config.Reads' Reader, one database for the whole export.
//
// It reads keyset pages of exportPageSize on (created_at, id), each a short
// statement of its own, read whole and the connection returned before its
// rows are yielded: memory stays at one page whatever the total, no
// transaction or snapshot is held for the length of a download, and a slow
// client holds no connection. Rows are scanned straight into their fields,
// without GORM's reflection. A consumer that stops (a client gone) stops
// the reading. Payments created after the export began come before its
// first page and are not in it.
//
// An error (a bad filter, the database) is yielded once, last.
func (s *Service) Export(ctx context.Context, f Filter) iter.Seq2[Payment, error] {
	return func(yield func(Payment, error) bool) {
		conds, args, err := filterConditions(f)
		if err != nil {
			yield(Payment{}, err)
			return
		}
		// One database for the whole export: a replica while it is fit
		// (an export may be a few seconds stale), never half from each.
		db := s.reads.Reader()
		var afterAt time.Time
		var afterID string
		page := make([]Payment, 0, exportPageSize)
		for {
			page, err = s.exportPage(ctx, db, conds, args, f.Search, afterID != "", afterAt, afterID, page[:0])
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
			afterAt, afterID = last.CreatedAt, last.ID
		}
	}
}

// exportPage reads the next page after (afterAt, afterID), appending to
// into. A search reads the client-id and the key matches apart, each in
// index order and limited, and merges them, as List does.
func (s *Service) exportPage(ctx context.Context, db *gorm.DB, conds []string, args []any, search string,
	resume bool, afterAt time.Time, afterID string, into []Payment) ([]Payment, error) {
	if resume {
		conds = append(conds[:len(conds):len(conds)], "(created_at, id) < (?, ?)")
		args = append(args[:len(args):len(args)], afterAt.UTC(), afterID)
	}
	query, queryArgs := pageQuery(conds, args, search, exportPageSize)
	// Each page is bounded like any read: the export as a whole is not
	// (it streams every payment), but it stops when the database does.
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := db.WithContext(ctx).Raw(query, queryArgs...).Rows()
	if err != nil {
		return nil, fmt.Errorf("export payments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		p, err := scanPayment(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("export payments: %w", err)
		}
		into = append(into, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export payments: %w", err)
	}
	return into, nil
}
