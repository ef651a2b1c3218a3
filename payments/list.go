package payments

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/clientid"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/storable"
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
	// WaitingOperation keeps payments with work the processor has not
	// settled: a capture or cancel (PendingOperation) or a refund still
	// PROCESSING (Reserved).
	WaitingOperation bool
}

// Page is one page of a listing, newest first.
type Page struct {
	Payments []Payment
	// Cursors holds, for each payment, the cursor that resumes after it.
	Cursors []string
	// HasNextPage says more payments follow this page; it is true only
	// when the page has an EndCursor to continue from.
	HasNextPage bool
}

// EndCursor is the cursor after the page's last payment, or "" if empty.
func (p Page) EndCursor() string {
	if len(p.Cursors) == 0 {
		return ""
	}
	return p.Cursors[len(p.Cursors)-1]
}

// listing is a filter as the page_* fragments of sql/common.sql (their
// text) and their named arguments, shared by List and Export so that an
// export holds exactly the rows the list pages through.
type listing struct {
	fragments []string
	args      map[string]any
	search    bool
}

// listingOf checks f and turns it into a listing.
func listingOf(f Filter) (listing, error) {
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return listing{}, invalid("to", "the end of the date range must come after its start")
	}
	for _, v := range []struct {
		field string
		at    time.Time
	}{{"from", f.From}, {"to", f.To}} {
		if !v.at.IsZero() && !storable.Time(v.at) {
			return listing{}, invalid(v.field, "a date range must lie within years 1 to 9999")
		}
	}
	for _, v := range []struct{ field, value string }{
		{"clientId", f.ClientID}, {"idempotencyKey", f.IdempotencyKey}, {"q", f.Search},
	} {
		if !storable.Text(v.value) {
			return listing{}, invalid(v.field, "a NUL character or bytes that are not UTF-8 are in a filter, and no payment can have them")
		}
	}
	if f.Status != "" && !f.Status.Valid() {
		return listing{}, invalid("status", "status is not a payment status")
	}
	l := listing{args: map[string]any{}, search: f.Search != ""}
	where := func(fragment string, args map[string]any) {
		l.fragments = append(l.fragments, fragment)
		maps.Copy(l.args, args)
	}
	if f.ClientID != "" {
		f.ClientID = clientid.Normalize(f.ClientID)
		where(commonSQL.SQL("page_client"), map[string]any{"client_id": f.ClientID})
	}
	if f.IdempotencyKey != "" {
		where(commonSQL.SQL("page_key"), map[string]any{"idempotency_key": f.IdempotencyKey})
	}
	if f.Flagged {
		where(commonSQL.SQL("page_flagged"), nil)
	}
	if f.Replayed {
		where(commonSQL.SQL("page_replayed"), nil)
	}
	if f.Rejected {
		where(commonSQL.SQL("page_rejected"), nil)
	}
	if f.Amount != nil {
		where(commonSQL.SQL("page_amount"), map[string]any{"amount_minor": f.Amount.Minor, "currency": f.Amount.Currency})
	}
	if f.Status != "" {
		where(commonSQL.SQL("page_status"), map[string]any{"status": string(f.Status)})
	}
	if f.WaitingOperation {
		where(commonSQL.SQL("page_waiting_operation"), nil)
	}
	if !f.From.IsZero() {
		where(commonSQL.SQL("page_from"), map[string]any{"created_from": f.From.UTC()})
	}
	if !f.To.IsZero() {
		where(commonSQL.SQL("page_to"), map[string]any{"created_before": f.To.UTC()})
	}
	if l.search {
		l.args["search"] = f.Search
	}
	return l, nil
}

// position is where a page resumes: after the payment created at at with
// id id, in the listing's order.
type position struct {
	at time.Time
	id string
}

// pageQuery is a page's statement, composed of named fragments, and its
// named arguments.
type pageQuery struct {
	sql  string
	args map[string]any
}

// page is the statement that reads up to size payments of l, newest
// first, after the position if one is given. A search is three reads
// merged (search_open in sql/common.sql says why).
func (l listing) page(after *position, size int) pageQuery {
	args := map[string]any{"page_size": size}
	maps.Copy(args, l.args)
	conds := l.fragments
	if after != nil {
		conds = append(slices.Clip(conds), commonSQL.SQL("page_after"))
		args["after_at"], args["after_id"] = after.at.UTC(), after.id
	}
	read := func(match ...string) []string {
		return slices.Concat([]string{commonSQL.SQL("page_select")}, conds, match, []string{commonSQL.SQL("page_order")})
	}
	texts := read()
	if l.search {
		texts = slices.Concat([]string{commonSQL.SQL("search_open")}, read(commonSQL.SQL("page_search_id")),
			[]string{commonSQL.SQL("search_then_client")}, read(commonSQL.SQL("page_search_client")),
			[]string{commonSQL.SQL("search_then_key")}, read(commonSQL.SQL("page_search_key")),
			[]string{commonSQL.SQL("search_close")})
	}
	return pageQuery{sql: strings.Join(texts, "\n"), args: args}
}

// readPage reads q on the database db, a replica or the primary.
func (s *Service) readPage(ctx context.Context, db *gorm.DB, q pageQuery) ([]Payment, error) {
	r, err := s.store.runnerOn(db)
	if err != nil {
		return nil, err
	}
	return s.store.listPayments(ctx, r, q)
}

// Get returns the payment with the given id, or an error wrapping
// ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (Payment, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	p, ok, err := s.readPayment(ctx, id)
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
	l, err := listingOf(f)
	if err != nil {
		return Page{}, err
	}
	var resume *position
	if after != "" {
		at, id, err := decodeCursor(after)
		if err != nil {
			return Page{}, err
		}
		resume = &position{at: at, id: id}
	}
	if first == 0 {
		// No payment, so no cursor to continue from: a pager that loops
		// while HasNextPage would never advance, so none is said to follow
		// (Relay's algorithm would say true when any match).
		return Page{Payments: []Payment{}, Cursors: []string{}}, nil
	}
	q := l.page(resume, first+1)

	// A listing may be a few seconds stale: a replica serves it while fit.
	var rows []Payment
	err = s.reads.Read(func(db *gorm.DB) error {
		rows, err = s.readPage(ctx, db, q)
		return err
	})
	if err != nil {
		return Page{}, fmt.Errorf("list payments: %w", err)
	}

	page := Page{HasNextPage: len(rows) > first}
	if page.HasNextPage {
		rows = rows[:first]
	}
	page.Payments = rows
	page.Cursors = make([]string, len(rows))
	for i, p := range rows {
		page.Cursors[i] = encodeCursor(p)
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
// costs (the GraphQL API batches its resolvers into it). An event's
// payment has the attempts made up to its event.
func (s *Service) AttemptsOf(ctx context.Context, ps []Payment) ([][]Attempt, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.store.attemptsOf(ctx, paymentIDs(ps))
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	byID := groupByPayment(rows, func(r models.IdempotencyAttempt) string { return r.PaymentID })
	out := make([][]Attempt, len(ps))
	for i, p := range ps {
		out[i] = []Attempt{}
		for _, row := range byID[p.ID] {
			if p.after(row.At) {
				continue
			}
			a, err := attemptFromRow(row, p)
			if err != nil {
				return nil, fmt.Errorf("list attempts: %w", err)
			}
			out[i] = append(out[i], a)
		}
	}
	return out, nil
}

// Refunds returns payment p's refunds, oldest first.
func (s *Service) Refunds(ctx context.Context, p Payment) ([]Refund, error) {
	all, err := s.RefundsOf(ctx, []Payment{p})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// RefundsOf returns the refunds of each payment, in one query; an event's
// payment's as they stood at its event (RefundsAt).
func (s *Service) RefundsOf(ctx context.Context, ps []Payment) ([][]Refund, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.store.refundsOf(ctx, paymentIDs(ps))
	if err != nil {
		return nil, fmt.Errorf("list refunds: %w", err)
	}
	byID := groupByPayment(rows, func(r models.Refund) string { return r.PaymentID })
	out := make([][]Refund, len(ps))
	for i, p := range ps {
		out[i] = RefundsAt(byID[p.ID], p)
	}
	return out, nil
}

// ProcessorCallsOf returns the processor calls of each payment, oldest
// first, in one query; an event's payment's up to its event.
func (s *Service) ProcessorCallsOf(ctx context.Context, ps []Payment) ([][]ProcessorCall, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.store.processorCallsOf(ctx, paymentIDs(ps))
	if err != nil {
		return nil, fmt.Errorf("list processor calls: %w", err)
	}
	byID := groupByPayment(rows, func(r models.ProcessorCall) string { return r.PaymentID })
	out := make([][]ProcessorCall, len(ps))
	for i, p := range ps {
		out[i] = []ProcessorCall{}
		for _, row := range byID[p.ID] {
			if p.after(row.At) {
				continue
			}
			c := ProcessorCall{Operation: Operation(row.Operation), Kind: CallKind(row.Kind), ProcessorKey: row.ProcessorKey,
				Outcome: CallOutcome(row.Outcome), At: row.At.UTC(), Duration: time.Duration(row.DurationMs) * time.Millisecond}
			if row.Code != nil {
				c.Code = *row.Code
			}
			if row.RecordState != nil {
				c.RecordState = *row.RecordState
			}
			out[i] = append(out[i], c)
		}
	}
	return out, nil
}

// AsyncStatesOf reads AsyncStateOf for each payment, in order, in one
// query however many there are: the zero AsyncState for a card payment or
// where Pix and boleto are paid at once (no query when none is left); an
// event's payment's own, as the event left it.
func (s *Service) AsyncStatesOf(ctx context.Context, ps []Payment) ([]AsyncState, error) {
	out := make([]AsyncState, len(ps))
	if !s.paysLater() {
		return out, nil
	}
	var live []Payment
	for i, p := range ps {
		switch {
		case !p.AsOf.IsZero():
			out[i] = AsyncState{NextAction: p.NextAction, PaidAt: p.PaidAt, ExpiredAt: p.ExpiredAt}
		case p.Method.async():
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	rows, err := s.store.asyncStatesOf(ctx, paymentIDs(live))
	if err != nil {
		return nil, fmt.Errorf("read next actions: %w", err)
	}
	byID := make(map[string]AsyncState, len(rows))
	for _, r := range rows {
		byID[r.paymentID] = r.state
	}
	for i, p := range ps {
		if p.AsOf.IsZero() && p.Method.async() {
			st, ok := byID[p.ID]
			if !ok {
				return nil, fmt.Errorf("payment %s: %w", p.ID, ErrNotFound)
			}
			out[i] = st
		}
	}
	return out, nil
}

// asyncRow is a payment's AsyncState as async_states_of reads it.
type asyncRow struct {
	paymentID string
	state     AsyncState
}

// scanAsyncState reads async_states_of's columns: id, then async_state's.
func scanAsyncState(row sqlq.Row) (asyncRow, error) {
	var r asyncRow
	var typ, pix, boleto, url *string
	var expires, paid, expired *time.Time
	if err := row.Scan(&r.paymentID, &typ, &pix, &boleto, &url, &expires, &paid, &expired); err != nil {
		return asyncRow{}, err
	}
	r.state = asyncState(typ, pix, boleto, url, expires, paid, expired)
	return r, nil
}

// asyncState is a payment's next action and times from their columns
// (async_state's), each NULL when the payment has none.
func asyncState(typ, pix, boleto, url *string, expires, paid, expired *time.Time) AsyncState {
	var st AsyncState
	if typ != nil && expires != nil {
		st.NextAction = &NextAction{Type: NextActionType(*typ), PixCode: deref(pix), BoletoLine: deref(boleto),
			HostedURL: deref(url), ExpiresAt: expires.UTC()}
	}
	if paid != nil {
		st.PaidAt = paid.UTC()
	}
	if expired != nil {
		st.ExpiredAt = expired.UTC()
	}
	return st
}

// groupByPayment keys rows, in their order, by their payment's id: a
// payment may be listed more than once (the same payment as several
// events left it), each reading the rows as of its own time.
func groupByPayment[T any](rows []T, paymentID func(T) string) map[string][]T {
	out := map[string][]T{}
	for _, r := range rows {
		id := paymentID(r)
		out[id] = append(out[id], r)
	}
	return out
}

// paymentIDs are ps's ids, each once: a replayed page's events may carry
// one payment many times.
func paymentIDs(ps []Payment) []string {
	ids := make([]string, 0, len(ps))
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if !seen[p.ID] {
			seen[p.ID] = true
			ids = append(ids, p.ID)
		}
	}
	return ids
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
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" || !storable.Text(parts[2]) {
		return time.Time{}, "", bad
	}
	micros, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	// Only a cursor this API could have returned: a time both databases
	// hold alike, spelled as encodeCursor spells it (no "+5" or "007"), so
	// that one position has one cursor.
	at := time.UnixMicro(micros).UTC()
	if !storable.Time(at) || encodeCursor(Payment{ID: parts[2], CreatedAt: at}) != cursor {
		return time.Time{}, "", bad
	}
	return at, parts[2], nil
}
