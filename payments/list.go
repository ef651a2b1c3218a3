package payments

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/models"
)

// Page sizes for List.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Filter narrows a listing. Zero fields do not filter.
type Filter struct {
	ClientID       string
	IdempotencyKey string
	// Flagged keeps payments whose key was replayed or rejected.
	Flagged bool
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

// Get returns the payment with the given id, or an error wrapping
// ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (Payment, error) {
	var row models.Payment
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Payment{}, fmt.Errorf("payment %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Payment{}, fmt.Errorf("get payment: %w", err)
	}
	return paymentFromRow(row), nil
}

// List returns up to first payments matching f, newest first, after the
// cursor (a cursor from an earlier page, or "" for the first page).
//
// Pages are keyset-paginated on (created_at, id): a page never skips or
// repeats a payment, however many are created while a client pages.
func (s *Service) List(ctx context.Context, f Filter, first int, after string) (Page, error) {
	if first < 0 || first > MaxPageSize {
		return Page{}, invalid("first", "first must be between 0 and %d, got %d", MaxPageSize, first)
	}
	q := s.db.WithContext(ctx).Model(&models.Payment{})
	if after != "" {
		at, id, err := decodeCursor(after)
		if err != nil {
			return Page{}, err
		}
		q = q.Where("(created_at, id) < (?, ?)", at, id)
	}
	if f.ClientID != "" {
		q = q.Where("client_id = ?", f.ClientID)
	}
	if f.IdempotencyKey != "" {
		q = q.Where("idempotency_key = ?", f.IdempotencyKey)
	}
	if f.Flagged {
		// The same predicate as the partial index idx_payments_flagged_created.
		q = q.Where("replay_count > 0 OR rejected_count > 0")
	}

	var rows []models.Payment
	if err := q.Order("created_at DESC, id DESC").Limit(first + 1).Find(&rows).Error; err != nil {
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

// Attempts returns every attempt made with a payment's key, oldest first.
func (s *Service) Attempts(ctx context.Context, paymentID string) ([]Attempt, error) {
	var rows []models.IdempotencyAttempt
	err := s.db.WithContext(ctx).Where("payment_id = ?", paymentID).Order("at, id").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	attempts := make([]Attempt, len(rows))
	for i, row := range rows {
		attempts[i] = attemptFromRow(row)
	}
	return attempts, nil
}

func attemptFromRow(row models.IdempotencyAttempt) Attempt {
	a := Attempt{Outcome: Outcome(row.Outcome), At: row.At.UTC(), Transport: row.Transport, DifferingFields: []string{}}
	if row.DifferingFields != "" {
		a.DifferingFields = strings.Split(row.DifferingFields, ",")
	}
	if row.AttemptedAmountMinor != nil && row.AttemptedCurrency != nil && row.AttemptedMethod != nil {
		a.Attempted = &AttemptedPayload{
			Amount: Money{Minor: *row.AttemptedAmountMinor, Currency: *row.AttemptedCurrency},
			Method: Method(*row.AttemptedMethod),
		}
	}
	return a
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
	if len(parts) != 3 || parts[0] != cursorVersion || parts[2] == "" {
		return time.Time{}, "", bad
	}
	micros, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	return time.UnixMicro(micros).UTC(), parts[2], nil
}
