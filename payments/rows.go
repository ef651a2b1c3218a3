package payments

import (
	"database/sql"
	"strings"
	"time"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// The statements read a payment, a refund, an attempt and a key in one
// column order each (sql/*.sql), which the scans below follow.

// scanPayment reads a payment's columns: id, client_id, idempotency_key,
// amount_minor, currency, method, created_at, status, captured_minor,
// refunded_minor, captured_at, canceled_at, replay_count, rejected_count,
// processor, processor_reference, decline_code, pending_operation,
// reserved_minor, payment_method_token.
func scanPayment(row sqlq.Row) (Payment, error) {
	var r models.Payment
	if err := row.Scan(&r.ID, &r.ClientID, &r.IdempotencyKey, &r.AmountMinor, &r.Currency, &r.Method, &r.CreatedAt,
		&r.Status, &r.CapturedMinor, &r.RefundedMinor, &r.CapturedAt, &r.CanceledAt, &r.ReplayCount, &r.RejectedCount,
		&r.Processor, &r.ProcessorReference, &r.DeclineCode, &r.PendingOperation, &r.ReservedMinor,
		&r.PaymentMethodToken); err != nil {
		return Payment{}, err
	}
	return paymentFromRow(r), nil
}

// scanRefund reads a refund's columns (id, payment_id, amount_minor,
// reason, idempotency_key, created_at, status, failure_code, returned_at,
// settled_at), of a payment in currency.
func scanRefund(row sqlq.Row, currency string) (Refund, error) {
	r, err := scanRefundRow(row)
	if err != nil {
		return Refund{}, err
	}
	return refundFromRow(r, currency), nil
}

func scanRefundRow(row sqlq.Row) (models.Refund, error) {
	var r models.Refund
	err := row.Scan(&r.ID, &r.PaymentID, &r.AmountMinor, &r.Reason, &r.IdempotencyKey, &r.CreatedAt, &r.Status, &r.FailureCode,
		&r.ReturnedAt, &r.SettledAt)
	return r, err
}

// scanProcessorCall reads a processor call's columns: payment_id,
// operation, kind, processor_key, outcome, code, record_state, at,
// duration_ms.
func scanProcessorCall(row sqlq.Row) (models.ProcessorCall, error) {
	var c models.ProcessorCall
	err := row.Scan(&c.PaymentID, &c.Operation, &c.Kind, &c.ProcessorKey, &c.Outcome, &c.Code, &c.RecordState, &c.At,
		&c.DurationMs)
	return c, err
}

// scanAttempt reads an attempt's columns: id, payment_id, operation,
// outcome, at, idempotency_key, params, held_params, refusal, refund_id,
// differing_fields, attempted_amount_minor, attempted_currency,
// attempted_method, transport, actor, actor_address.
func scanAttempt(row sqlq.Row) (models.IdempotencyAttempt, error) {
	var a models.IdempotencyAttempt
	err := row.Scan(&a.ID, &a.PaymentID, &a.Operation, &a.Outcome, &a.At, &a.IdempotencyKey, &a.Params, &a.HeldParams,
		&a.Refusal, &a.RefundID, &a.DifferingFields, &a.AttemptedAmountMinor, &a.AttemptedCurrency, &a.AttemptedMethod,
		&a.Transport, &a.Actor, &a.ActorAddress)
	return a, err
}

// scanHeld reads a key's columns: id, operation, params, fingerprint,
// fingerprint_version, created_at, payment_id, refund_id. A version 1
// key's params are nil: settleHeld rebuilds them from its payment.
func scanHeld(row sqlq.Row) (*heldKey, error) {
	var h heldKey
	var params, refundID, opID sql.NullString
	if err := row.Scan(&h.id, &h.operation, &params, &h.fp, &h.version, &h.createdAt, &h.paymentID, &refundID,
		&opID); err != nil {
		return nil, err
	}
	if params.Valid {
		var err error
		if h.params, err = decodeParams(&params.String); err != nil {
			return nil, err
		}
	}
	h.refundID, h.opID = refundID.String, opID.String
	return &h, nil
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

		Processor:          row.Processor,
		ProcessorReference: deref(row.ProcessorReference),
		DeclineCode:        deref(row.DeclineCode),
		PendingOperation:   Operation(deref(row.PendingOperation)),
		Reserved:           money(row.ReservedMinor),
		PaymentMethodToken: deref(row.PaymentMethodToken),
	}
}

// deref is *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// derefTime is *t in UTC, the zero time for nil.
func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// cmpOr is s, or def when s is empty (a refund read without its status,
// from before refunds had one, succeeded).
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func refundFromRow(row models.Refund, currency string) Refund {
	return Refund{
		ID:             row.ID,
		PaymentID:      row.PaymentID,
		Amount:         Money{Minor: row.AmountMinor, Currency: currency},
		Reason:         row.Reason,
		IdempotencyKey: row.IdempotencyKey,
		CreatedAt:      row.CreatedAt.UTC(),
		Status:         RefundStatus(cmpOr(row.Status, string(RefundSucceeded))),
		FailureCode:    deref(row.FailureCode),
		ReturnedAt:     derefTime(row.ReturnedAt),
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

// scanID reads a row of one id.
func scanID(row sqlq.Row) (string, error) {
	var id string
	err := row.Scan(&id)
	return id, err
}
