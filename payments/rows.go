package payments

import (
	"strings"
	"time"

	"github.com/cmpay/cmpay/models"
)

// paymentColumns are a payment's columns as every statement reads them, in
// models.Payment's order.
const paymentColumns = "id, client_id, idempotency_key, amount_minor, currency, method, created_at, " +
	"status, captured_minor, refunded_minor, captured_at, canceled_at, replay_count, rejected_count"

// refundColumns are a refund's, in models.Refund's order.
const refundColumns = "id, payment_id, amount_minor, reason, idempotency_key, created_at"

// scanPayment reads a row of paymentColumns with scan (a *sql.Row's or
// *sql.Rows' Scan).
func scanPayment(scan func(...any) error) (Payment, error) {
	var r models.Payment
	if err := scan(&r.ID, &r.ClientID, &r.IdempotencyKey, &r.AmountMinor, &r.Currency, &r.Method, &r.CreatedAt,
		&r.Status, &r.CapturedMinor, &r.RefundedMinor, &r.CapturedAt, &r.CanceledAt, &r.ReplayCount, &r.RejectedCount); err != nil {
		return Payment{}, err
	}
	return paymentFromRow(r), nil
}

func paymentFromRow(row models.Payment) Payment {
	money := func(minor int64) Money { return Money{Minor: minor, Currency: row.Currency} }
	return Payment{
		ID:             row.ID,
		ClientID:       row.ClientID,
		Amount:         money(row.AmountMinor),
		Method:         Method(row.Method),
		IdempotencyKey: row.IdempotencyKey,
		CreatedAt:      row.CreatedAt.UTC(),
		Status:         Status(row.Status),
		Captured:       money(row.CapturedMinor),
		Refunded:       money(row.RefundedMinor),
		CapturedAt:     utc(row.CapturedAt),
		CanceledAt:     utc(row.CanceledAt),
		ReplayCount:    row.ReplayCount,
		RejectedCount:  row.RejectedCount,
	}
}

func refundFromRow(row models.Refund, currency string) Refund {
	return Refund{
		ID:             row.ID,
		PaymentID:      row.PaymentID,
		Amount:         Money{Minor: row.AmountMinor, Currency: currency},
		Reason:         row.Reason,
		IdempotencyKey: row.IdempotencyKey,
		CreatedAt:      row.CreatedAt.UTC(),
	}
}

// attemptFromRow reads an attempt. A rejection names the fields that
// differ from the key's first request, computed from the two requests'
// parameters; version 1 rows stored the names and the attempted payload
// instead.
func attemptFromRow(row models.IdempotencyAttempt, p Payment) (Attempt, error) {
	a := Attempt{
		Operation:       Operation(row.Operation),
		IdempotencyKey:  row.IdempotencyKey,
		Outcome:         Outcome(row.Outcome),
		At:              row.At.UTC(),
		DifferingFields: []string{},
		Refusal:         row.Refusal,
		Transport:       row.Transport,
		Actor:           row.Actor,
	}
	if row.RefundID != nil {
		a.RefundID = *row.RefundID
	}
	var err error
	if a.Params, err = decodeParams(row.Params); err != nil {
		return Attempt{}, err
	}
	if a.Held, err = decodeParams(row.HeldParams); err != nil {
		return Attempt{}, err
	}
	switch {
	case row.DifferingFields != "":
		// Version 1: a rejected create, its payload in the Attempted* columns.
		a.DifferingFields = strings.Split(row.DifferingFields, ",")
		if row.AttemptedAmountMinor != nil && row.AttemptedCurrency != nil && row.AttemptedMethod != nil {
			attempted := Money{Minor: *row.AttemptedAmountMinor, Currency: *row.AttemptedCurrency}
			a.Params = createParams(attempted, Method(*row.AttemptedMethod), true)
			a.Held = version1Params(p)
		}
	case a.Outcome == OutcomeRejected && a.Held != nil:
		a.DifferingFields = differingFields(a.Held, a.Params)
	}
	return a, nil
}

// utc returns t in UTC, or the zero time for nil.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
