package payments

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/models"
)

// readTimeout bounds a read: one on a connection to a database that went
// silent is given up, and the client told to retry, rather than held until
// the client leaves.
const readTimeout = 10 * time.Second

// Page sizes for List.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Filter narrows a listing. Zero fields do not filter; set fields combine.
type Filter struct {
	ClientID       string
	IdempotencyKey string
	// Flagged keeps payments whose key was replayed or rejected.
	Flagged bool
	// Replayed keeps payments whose key was replayed; Rejected, those whose
	// key was refused for another payload.
	Replayed bool
	Rejected bool
	// From and To bound the creation time: From <= created_at < To.
	From, To time.Time
	// Search keeps payments whose id, client id or idempotency key is
	// exactly this (support staff paste whichever the customer gave them).
	Search string
	// Amount, if set, keeps payments of exactly this amount and currency.
	Amount *Money
	// Status, if set, keeps payments in this status.
	Status Status
}

// Page is one page of a listing, newest first.
type Page struct {
	Payments []Payment
	// Cursors holds, for each payment, the cursor that resumes after it.
	Cursors     []string
	HasNextPage bool
}

// EndCursor is the cursor after the page's last payment, or "" if empty.
func (p Page) EndCursor() string {
	if len(p.Cursors) == 0 {
		return ""
	}
	return p.Cursors[len(p.Cursors)-1]
}

// filterConditions are the SQL conditions of a filter, shared by List and
// Export so that an export holds exactly the rows the list pages through.
// Each predicate is written exactly as its index's (the partial ones
// included), so the planner can use the index.
func filterConditions(f Filter) ([]string, []any, error) {
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return nil, nil, invalid("to", "the end of the date range must come after its start")
	}
	for _, v := range []struct{ field, value string }{
		{"clientId", f.ClientID}, {"idempotencyKey", f.IdempotencyKey}, {"q", f.Search},
	} {
		if !StorableText(v.value) {
			return nil, nil, invalid(v.field, "a NUL character or bytes that are not UTF-8 are in a filter, and no payment can have them")
		}
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
			return nil, nil, invalid("status", "status is not a payment status")
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

// pageQuery is one newest-first read of at most limit payments matching
// conds. A search for an id, client id or key ("id = q OR client = q OR
// key = q" would make the database sort every payment of a large client)
// is three reads, each in index order and limited, merged: about 2 × limit
// rows, since an id matches one payment at most.
func pageQuery(conds []string, args []any, search string, limit int) (string, []any) {
	read := func(extra string, extraArg any) (string, []any) {
		cs, as := conds, args
		if extra != "" {
			cs = append(append([]string{}, cs...), extra)
			as = append(append([]any{}, as...), extraArg)
		}
		q := "SELECT " + paymentColumns + " FROM payments"
		if len(cs) > 0 {
			q += " WHERE " + strings.Join(cs, " AND ")
		}
		return q + " ORDER BY created_at DESC, id DESC LIMIT ?", append(as, limit)
	}
	if search == "" {
		return read("", nil)
	}
	byID, idArgs := read("id = ?", search)
	byClient, clientArgs := read("client_id = ?", search)
	byKey, keyArgs := read("idempotency_key = ?", search)
	return "SELECT * FROM (" + byID + ") AS by_id UNION SELECT * FROM (" + byClient + ") AS by_client" +
			" UNION SELECT * FROM (" + byKey + ") AS by_key ORDER BY created_at DESC, id DESC LIMIT ?",
		append(append(append(idArgs, clientArgs...), keyArgs...), limit)
}

// Get returns the payment with the given id, or an error wrapping
// ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (Payment, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	p, ok, err := readPayment(s.db.WithContext(ctx), id)
	if err != nil {
		return Payment{}, fmt.Errorf("get payment: %w", err)
	}
	if !ok {
		return Payment{}, fmt.Errorf("payment %q: %w", id, ErrNotFound)
	}
	return p, nil
}

// List returns up to first payments matching f, newest first, after the
// cursor (a cursor from an earlier page, or "" for the first page).
//
// Pages are keyset-paginated on (created_at, id): a page never skips or
// repeats a payment, however many are created while a client pages. Each
// filter is served by an index that ends in (created_at, id), so a page
// reads about first rows whatever the table's size; there is no OFFSET and
// no COUNT.
func (s *Service) List(ctx context.Context, f Filter, first int, after string) (Page, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if first < 0 || first > MaxPageSize {
		return Page{}, invalid("first", "first must be between 0 and %d", MaxPageSize)
	}
	conds, args, err := filterConditions(f)
	if err != nil {
		return Page{}, err
	}
	if after != "" {
		at, id, err := decodeCursor(after)
		if err != nil {
			return Page{}, err
		}
		conds, args = append(conds, "(created_at, id) < (?, ?)"), append(args, at, id)
	}
	query, queryArgs := pageQuery(conds, args, f.Search, first+1)

	// A listing may be a few seconds stale: a replica serves it while fit.
	var rows []models.Payment
	err = s.reads.Read(func(db *gorm.DB) error {
		rows = nil
		return db.WithContext(ctx).Raw(query, queryArgs...).Scan(&rows).Error
	})
	if err != nil {
		return Page{}, fmt.Errorf("list payments: %w", err)
	}

	page := Page{HasNextPage: len(rows) > first}
	if page.HasNextPage {
		rows = rows[:first]
	}
	page.Payments = make([]Payment, len(rows))
	page.Cursors = make([]string, len(rows))
	for i, row := range rows {
		page.Payments[i] = paymentFromRow(row)
		page.Cursors[i] = encodeCursor(page.Payments[i])
	}
	return page, nil
}

// Attempts returns every request made against payment p, whatever its
// operation and key, oldest first.
func (s *Service) Attempts(ctx context.Context, p Payment) ([]Attempt, error) {
	all, err := s.AttemptsOf(ctx, []Payment{p})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// AttemptsOf returns the attempts of each payment, in one query however
// many payments there are: what a page of payments with their timelines
// costs (the GraphQL API batches its resolvers into it).
func (s *Service) AttemptsOf(ctx context.Context, ps []Payment) ([][]Attempt, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var rows []models.IdempotencyAttempt
	err := s.db.WithContext(ctx).Where("payment_id IN ?", paymentIDs(ps)).Order("payment_id, at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	out, at := make([][]Attempt, len(ps)), indexByID(ps)
	for _, row := range rows {
		i := at[row.PaymentID]
		a, err := attemptFromRow(row, ps[i])
		if err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		out[i] = append(out[i], a)
	}
	for i := range out {
		if out[i] == nil {
			out[i] = []Attempt{}
		}
	}
	return fillShared(out, ps, at), nil
}

// Refunds returns payment p's refunds, oldest first.
func (s *Service) Refunds(ctx context.Context, p Payment) ([]Refund, error) {
	all, err := s.RefundsOf(ctx, []Payment{p})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// RefundsOf returns the refunds of each payment, in one query.
func (s *Service) RefundsOf(ctx context.Context, ps []Payment) ([][]Refund, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var rows []models.Refund
	err := s.db.WithContext(ctx).Where("payment_id IN ?", paymentIDs(ps)).Order("payment_id, created_at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	out, at := make([][]Refund, len(ps)), indexByID(ps)
	for _, row := range rows {
		i := at[row.PaymentID]
		out[i] = append(out[i], refundFromRow(row, ps[i].Amount.Currency))
	}
	for i := range out {
		if out[i] == nil {
			out[i] = []Refund{}
		}
	}
	return fillShared(out, ps, at), nil
}

func paymentIDs(ps []Payment) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	return ids
}

// indexByID maps each payment id to its first position in ps.
func indexByID(ps []Payment) map[string]int {
	at := make(map[string]int, len(ps))
	for i := len(ps) - 1; i >= 0; i-- {
		at[ps[i].ID] = i
	}
	return at
}

// fillShared gives a payment listed twice the same list as its first
// place: rows were appended to that one only.
func fillShared[T any](out [][]T, ps []Payment, at map[string]int) [][]T {
	for i, p := range ps {
		out[i] = out[at[p.ID]]
	}
	return out
}

// Cursors are opaque to clients: base64url of "v1:<created_at µs>:<id>".
const cursorVersion = "v1"

func encodeCursor(p Payment) string {
	raw := cursorVersion + ":" + strconv.FormatInt(p.CreatedAt.UnixMicro(), 10) + ":" + p.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(cursor string) (time.Time, string, error) {
	bad := invalid("after", "after is not a cursor this API returned")
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", bad
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" || !StorableText(parts[2]) {
		return time.Time{}, "", bad
	}
	micros, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	return time.UnixMicro(micros).UTC(), parts[2], nil
}
