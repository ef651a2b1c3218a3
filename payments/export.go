package payments

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/cmpay/cmpay/models"
)

// exportPageSize is how many payments one statement of Export reads: ten
// List pages, so a million rows take a thousand short statements rather
// than ten thousand, and a page in memory is about 300 KB.
const exportPageSize = 1000

// Export yields every payment matching f, newest first, however many there
// are, for the admin's CSV export: the same filter and order as List (the
// conditions below are List's, one for one, and TestExportMatchesList walks
// both over every filter), so an export holds exactly the rows the list
// pages through.
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
		conds, args, err := exportConditions(f)
		if err != nil {
			yield(Payment{}, err)
			return
		}
		var afterAt time.Time
		var afterID string
		page := make([]Payment, 0, exportPageSize)
		for {
			page, err = s.exportPage(ctx, conds, args, f.Search, afterID != "", afterAt, afterID, page[:0])
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

// exportConditions are List's conditions for f, in List's words, after
// List's checks.
func exportConditions(f Filter) ([]string, []any, error) {
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return nil, nil, invalid("to", "the end of the date range must come after its start")
	}
	var conds []string
	var args []any
	where := func(cond string, a ...any) {
		conds = append(conds, cond)
		args = append(args, a...)
	}
	if f.ClientID != "" {
		where("client_id = ?", f.ClientID)
	}
	if f.IdempotencyKey != "" {
		where("idempotency_key = ?", f.IdempotencyKey)
	}
	// As in List, each predicate is written exactly as its partial index's.
	if f.Flagged {
		where("(replayed_at IS NOT NULL OR rejected_at IS NOT NULL)")
	}
	if f.Replayed {
		where("replayed_at IS NOT NULL")
	}
	if f.Rejected {
		where("rejected_at IS NOT NULL")
	}
	if f.Amount != nil {
		where("amount_minor = ? AND currency = ?", f.Amount.Minor, f.Amount.Currency)
	}
	if f.Status != "" {
		if !f.Status.Valid() {
			return nil, nil, invalid("status", "status %q is not a payment status", f.Status)
		}
		where("status = ?", string(f.Status))
	}
	if !f.From.IsZero() {
		where("created_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		where("created_at < ?", f.To.UTC())
	}
	return conds, args, nil
}

// exportPage reads the next page after (afterAt, afterID), appending to
// into. A search reads the client-id and the key matches apart, each in
// index order and limited, and merges them, as List does.
func (s *Service) exportPage(ctx context.Context, conds []string, args []any, search string,
	resume bool, afterAt time.Time, afterID string, into []Payment) ([]Payment, error) {
	read := func(extra ...string) (string, []any) {
		cs := append([]string{}, conds...)
		as := append([]any{}, args...)
		if resume {
			cs = append(cs, "(created_at, id) < (?, ?)")
			as = append(as, afterAt.UTC(), afterID)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			cs = append(cs, extra[i])
			as = append(as, extra[i+1])
		}
		q := "SELECT " + paymentColumns + " FROM payments"
		if len(cs) > 0 {
			q += " WHERE " + strings.Join(cs, " AND ")
		}
		return q + " ORDER BY created_at DESC, id DESC LIMIT ?", append(as, exportPageSize)
	}
	query, queryArgs := read()
	if search != "" {
		byClient, clientArgs := read("client_id = ?", search)
		byKey, keyArgs := read("idempotency_key = ?", search)
		query = "SELECT * FROM (" + byClient + ") AS by_client UNION SELECT * FROM (" + byKey + ") AS by_key" +
			" ORDER BY created_at DESC, id DESC LIMIT ?"
		queryArgs = append(append(clientArgs, keyArgs...), exportPageSize)
	}
	rows, err := s.db.WithContext(ctx).Raw(query, queryArgs...).Rows()
	if err != nil {
		return nil, fmt.Errorf("export payments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r models.Payment
		// paymentColumns' order.
		if err := rows.Scan(&r.ID, &r.ClientID, &r.IdempotencyKey, &r.AmountMinor, &r.Currency, &r.Method, &r.CreatedAt,
			&r.Status, &r.CapturedMinor, &r.RefundedMinor, &r.CapturedAt, &r.CanceledAt, &r.ReplayCount, &r.RejectedCount); err != nil {
			return nil, fmt.Errorf("export payments: %w", err)
		}
		into = append(into, paymentFromRow(r))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("export payments: %w", err)
	}
	return into, nil
}
