package payments_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

func ptr[T any](v T) *T { return &v }

// authorized creates an authorize-only payment of amount BRL.
func (b *bundle) authorized(t *testing.T, key, amount string) payments.Payment {
	t.Helper()
	req := request("client-1", key, amount, "BRL", payments.MethodCreditCard)
	req.Capture = ptr(false)
	return b.mustCreate(t, req).Payment
}

// captured creates a payment captured at creation.
func (b *bundle) captured(t *testing.T, key, amount string) payments.Payment {
	t.Helper()
	return b.mustCreate(t, request("client-1", key, amount, "BRL", payments.MethodPix)).Payment
}

func (b *bundle) capture(t *testing.T, id, key string, amount *string) (payments.ChangeResult, error) {
	t.Helper()
	return b.svc.Capture(t.Context(), payments.CaptureRequest{PaymentID: id, Amount: amount, IdempotencyKey: key,
		Origin: payments.Origin{Transport: "test"}})
}

func (b *bundle) cancel(t *testing.T, id, key string) (payments.ChangeResult, error) {
	t.Helper()
	return b.svc.Cancel(t.Context(), payments.CancelRequest{PaymentID: id, IdempotencyKey: key, Origin: payments.Origin{Transport: "test"}})
}

func (b *bundle) refund(t *testing.T, id, key string, amount *string) (payments.ChangeResult, error) {
	t.Helper()
	return b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: id, Amount: amount, IdempotencyKey: key,
		Origin: payments.Origin{Transport: "test"}})
}

// must(t)(b.refund(…)) fails the test on an error.
func must(t *testing.T) func(payments.ChangeResult, error) payments.ChangeResult {
	return func(res payments.ChangeResult, err error) payments.ChangeResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

// wantState checks a payment's status and amounts ("10.50" style).
func wantState(t *testing.T, p payments.Payment, status payments.Status, captured, refunded string) {
	t.Helper()
	if p.Status != status || p.Captured.String() != captured || p.Refunded.String() != refunded {
		t.Errorf("payment is %s, captured %s, refunded %s; want %s, %s, %s",
			p.Status, p.Captured, p.Refunded, status, captured, refunded)
	}
}

func wantStateConflict(t *testing.T, err error, status payments.Status) {
	t.Helper()
	var conflict *payments.StateConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, payments.ErrStateConflict) || conflict.Status != status {
		t.Fatalf("error = %v, want a state conflict with status %s", err, status)
	}
}

func wantExceeds(t *testing.T, err error, available string) {
	t.Helper()
	var exceeds *payments.AmountExceedsError
	if !errors.As(err, &exceeds) || !errors.Is(err, payments.ErrAmountExceeds) || exceeds.Available.String() != available {
		t.Fatalf("error = %v, want an amount-exceeds error with %s available", err, available)
	}
}

func wantReused(t *testing.T, err error, paymentID string, differing ...string) {
	t.Helper()
	var reused *payments.KeyReusedError
	if !errors.As(err, &reused) || reused.PaymentID != paymentID || !slices.Equal(reused.DifferingFields, differing) {
		t.Fatalf("error = %v (%+v), want the key reused on %s with %v differing", err, reused, paymentID, differing)
	}
}

func TestCaptureAndCancel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.authorized(t, "auth-1", "10.50")
		wantState(t, p, payments.StatusAuthorized, "0.00", "0.00")
		if !p.CapturedAt.IsZero() {
			t.Errorf("an authorization has capturedAt %v", p.CapturedAt)
		}

		// Above the authorized amount: refused, and the key stays unused.
		_, err := b.capture(t, p.ID, "cap-1", ptr("10.51"))
		wantExceeds(t, err, "10.50")
		res := must(t)(b.capture(t, p.ID, "cap-1", ptr("6")))
		if res.Replayed {
			t.Error("first capture says replayed")
		}
		wantState(t, res.Payment, payments.StatusCaptured, "6.00", "0.00")
		if res.Payment.CapturedAt.IsZero() {
			t.Error("captured payment has no capturedAt")
		}
		// The retry: the first result, nothing done again.
		again := must(t)(b.capture(t, p.ID, "cap-1", ptr("6.00")))
		if !again.Replayed || again.Payment.ID != p.ID || !again.Payment.CapturedAt.Equal(res.Payment.CapturedAt) {
			t.Errorf("retried capture = %+v, want a replay", again)
		}
		wantState(t, again.Payment, payments.StatusCaptured, "6.00", "0.00")
		// Capturing or canceling again, with new keys: the status refuses.
		_, err = b.capture(t, p.ID, "cap-2", nil)
		wantStateConflict(t, err, payments.StatusCaptured)
		_, err = b.cancel(t, p.ID, "cancel-1")
		wantStateConflict(t, err, payments.StatusCaptured)

		// Cancel another authorization; then nothing else applies to it.
		q := b.authorized(t, "auth-2", "20")
		canceled := must(t)(b.cancel(t, q.ID, "cancel-2"))
		wantState(t, canceled.Payment, payments.StatusCanceled, "0.00", "0.00")
		if canceled.Payment.CanceledAt.IsZero() {
			t.Error("canceled payment has no canceledAt")
		}
		if r := must(t)(b.cancel(t, q.ID, "cancel-2")); !r.Replayed {
			t.Error("retried cancel is not a replay")
		}
		_, err = b.capture(t, q.ID, "cap-3", nil)
		wantStateConflict(t, err, payments.StatusCanceled)
		_, err = b.refund(t, q.ID, "refund-1", nil)
		wantStateConflict(t, err, payments.StatusCanceled)

		// Capture with no amount captures all of it.
		r := b.authorized(t, "auth-3", "7.25")
		wantState(t, must(t)(b.capture(t, r.ID, "cap-4", nil)).Payment, payments.StatusCaptured, "7.25", "0.00")

		// Every request shows in the payment's timeline, refusals too.
		var got []string
		for _, a := range b.attempts(t, p.ID) {
			got = append(got, fmt.Sprintf("%s %s %s", a.Operation, a.IdempotencyKey, a.Outcome))
		}
		want := []string{
			"CREATE_PAYMENT auth-1 CREATED",
			"CAPTURE_PAYMENT cap-1 REFUSED",
			"CAPTURE_PAYMENT cap-1 APPLIED",
			"CAPTURE_PAYMENT cap-1 REPLAYED",
			"CAPTURE_PAYMENT cap-2 REFUSED",
			"CANCEL_PAYMENT cancel-1 REFUSED",
		}
		if !slices.Equal(got, want) {
			t.Errorf("attempts:\n%v\nwant:\n%v", got, want)
		}
		if a := b.attempts(t, p.ID)[1]; a.Refusal != "AMOUNT_EXCEEDS_AVAILABLE" {
			t.Errorf("refused attempt says %q, want AMOUNT_EXCEEDS_AVAILABLE", a.Refusal)
		}
	})
}

func TestRefunds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.captured(t, "pay-1", "100")
		first := must(t)(b.refund(t, p.ID, "ref-1", ptr("30")))
		wantState(t, first.Payment, payments.StatusPartiallyRefunded, "100.00", "30.00")
		if first.Refund == nil || first.Refund.Amount.String() != "30.00" || first.Refund.PaymentID != p.ID || first.Refund.IdempotencyKey != "ref-1" {
			t.Fatalf("refund = %+v", first.Refund)
		}
		// The retry gets the same refund.
		again := must(t)(b.refund(t, p.ID, "ref-1", ptr("30.00")))
		if !again.Replayed || again.Refund == nil || again.Refund.ID != first.Refund.ID {
			t.Errorf("retried refund = %+v, want a replay of %s", again, first.Refund.ID)
		}
		// More than is left: refused; the key stays unused.
		_, err := b.refund(t, p.ID, "ref-2", ptr("70.01"))
		wantExceeds(t, err, "70.00")
		second := must(t)(b.refund(t, p.ID, "ref-2", ptr("20")))
		wantState(t, second.Payment, payments.StatusPartiallyRefunded, "100.00", "50.00")
		// No amount: all that is left.
		last := must(t)(b.refund(t, p.ID, "ref-3", nil))
		wantState(t, last.Payment, payments.StatusRefunded, "100.00", "100.00")
		if last.Refund.Amount.String() != "50.00" {
			t.Errorf("refund of all that is left = %s, want 50.00", last.Refund.Amount)
		}
		// Nothing is left to refund: refused for the status.
		_, err = b.refund(t, p.ID, "ref-4", ptr("0.01"))
		wantStateConflict(t, err, payments.StatusRefunded)

		refunds, err := b.svc.Refunds(t.Context(), b.mustGet(t, p.ID))
		if err != nil {
			t.Fatal(err)
		}
		var amounts []string
		for _, r := range refunds {
			amounts = append(amounts, r.Amount.String())
		}
		if !slices.Equal(amounts, []string{"30.00", "20.00", "50.00"}) {
			t.Errorf("refunds = %v, want 30.00, 20.00, 50.00 oldest first", amounts)
		}
		// An authorization cannot be refunded.
		q := b.authorized(t, "auth-1", "5")
		_, err = b.refund(t, q.ID, "ref-5", nil)
		wantStateConflict(t, err, payments.StatusAuthorized)
	})
}

// One key namespace per client, shared by every operation: a key is bound
// to its operation, payment and parameters.
func TestChangeKeyReuse(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.captured(t, "pay-1", "100")
		q := b.captured(t, "pay-2", "100")
		must(t)(b.refund(t, p.ID, "ref-1", ptr("10")))
		before := b.rowCounts(t)

		_, err := b.refund(t, p.ID, "pay-1", ptr("10")) // the create's key (100)
		wantReused(t, err, p.ID, "operation", "amount")
		_, err = b.refund(t, p.ID, "ref-1", ptr("11"))
		wantReused(t, err, p.ID, "amount")
		_, err = b.refund(t, p.ID, "ref-1", nil)
		wantReused(t, err, p.ID, "amount")
		_, err = b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, Amount: ptr("10"), Reason: ptr("late"), IdempotencyKey: "ref-1"})
		wantReused(t, err, p.ID, "reason")
		_, err = b.refund(t, q.ID, "ref-1", ptr("10"))
		wantReused(t, err, p.ID, "paymentId")
		_, err = b.capture(t, p.ID, "ref-1", nil)
		wantReused(t, err, p.ID, "operation")
		// Another operation on another payment: both differ.
		_, err = b.cancel(t, q.ID, "ref-1")
		wantReused(t, err, p.ID, "operation", "paymentId")
		// A refund key reused to create a payment.
		_, err = b.svc.Create(t.Context(), request("client-1", "ref-1", "10", "BRL", payments.MethodPix))
		wantReused(t, err, p.ID, "operation")

		after := b.rowCounts(t)
		if after[0] != before[0] || after[1] != before[1] {
			t.Errorf("payments and keys changed from %v to %v: a rejection created something", before, after)
		}
		if got := b.mustGet(t, p.ID); got.Refunded.String() != "10.00" || got.RejectedCount != 8 {
			t.Errorf("payment refunded %s, rejected %d times; want 10.00 and 8", got.Refunded, got.RejectedCount)
		}
		// The rejections show in the timeline with what differed.
		attempts := b.attempts(t, p.ID)
		last := attempts[len(attempts)-1]
		if last.Operation != payments.OpCreate || last.Outcome != payments.OutcomeRejected || !slices.Equal(last.DifferingFields, []string{"operation"}) {
			t.Errorf("last attempt = %+v, want the create rejected for its operation", last)
		}
	})
}

// A rejection's differing fields compare the key's stored parameters,
// which PostgreSQL's statement sends back inside a JSON text (a HELD
// row's key), with the request's: a free-text reason with quotes, a
// backslash, HTML characters and non-ASCII letters must come back byte for
// byte, or it would be named as differing when only the amount does.
func TestRejectionComparesFreeTextExactly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.captured(t, "text-pay", "100")
		reason := `He said "no" \ <b>&amp;</b> — café, ünïcödé, and 𝄞`
		refund := func(amount string) (payments.ChangeResult, error) {
			return b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, Amount: ptr(amount), Reason: ptr(reason),
				IdempotencyKey: "text-ref"})
		}
		first, err := refund("5")
		if err != nil {
			t.Fatal(err)
		}
		if got := first.Refund.Reason; got == nil || *got != reason {
			t.Fatalf("stored reason %q, want %q", ptrString(got), reason)
		}
		again, err := refund("5")
		if err != nil || !again.Replayed || again.Refund.ID != first.Refund.ID {
			t.Fatalf("retry = %+v, %v; want a replay of %s", again, err, first.Refund.ID)
		}
		_, err = refund("6")
		wantReused(t, err, p.ID, "amount")
	})
}

func ptrString(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestChangeNotFoundAndBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.captured(t, "pay-1", "100")
		yen := b.mustCreate(t, request("client-1", "yen-1", "1000", "JPY", payments.MethodPix)).Payment
		before := b.rowCounts(t)
		// Ids this API never issued, whatever their form.
		for _, id := range []string{"pay_01NOPE", "", "x", "pay_\xff\xfe", string(make([]byte, 5000)), "pay_' OR 1=1 --"} {
			if _, err := b.refund(t, id, "ref-x", nil); !errors.Is(err, payments.ErrNotFound) {
				t.Errorf("refund of %q: %v, want ErrNotFound", id, err)
			}
		}
		// Input the payment's currency refuses: a validation error, before
		// the key or the status is looked at.
		var invalid *payments.InvalidInputError
		if _, err := b.refund(t, yen.ID, "ref-y", ptr("1.5")); !errors.As(err, &invalid) || invalid.Problems[0].Field != "amount" {
			t.Errorf("refund of 1.5 JPY: %v, want a bad amount", err)
		}
		for _, amount := range []string{"0", "-1", "abc", "1.00001"} {
			if _, err := b.refund(t, p.ID, "ref-z", ptr(amount)); !errors.As(err, &invalid) {
				t.Errorf("refund of %q: %v, want bad input", amount, err)
			}
		}
		if _, err := b.refund(t, p.ID, " ref", nil); !errors.As(err, &invalid) {
			t.Errorf("a key with a leading space: %v, want bad input", err)
		}
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r", Reason: ptr("bad\u202ereason")}); !errors.As(err, &invalid) {
			t.Errorf("a reason with a bidi override: %v, want bad input", err)
		}
		if got := b.rowCounts(t); got != before {
			t.Errorf("rows changed from %v to %v: refused input wrote something", before, got)
		}
	})
}

// A request that may only touch one client's payments cannot change
// another's, nor create one for another client (which would squat its key).
func TestClientScope(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p := b.captured(t, "pay-1", "100")
		before := b.rowCounts(t)
		other := payments.Origin{Transport: "test", Client: "client-2"}
		_, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r", Origin: other})
		if !errors.Is(err, payments.ErrForbidden) {
			t.Errorf("refund by another client: %v, want ErrForbidden", err)
		}
		req := request("client-1", "squat", "0.01", "BRL", payments.MethodPix)
		req.Origin = other
		if _, err := b.svc.Create(t.Context(), req); !errors.Is(err, payments.ErrForbidden) {
			t.Errorf("create for another client: %v, want ErrForbidden", err)
		}
		if got := b.rowCounts(t); got != before {
			t.Errorf("rows changed from %v to %v", before, got)
		}
		own := payments.Origin{Transport: "test", Client: "client-1"}
		if _, err := b.svc.Refund(t.Context(), payments.RefundRequest{PaymentID: p.ID, IdempotencyKey: "r", Origin: own}); err != nil {
			t.Errorf("refund by the payment's own client: %v", err)
		}
	})
}

// The lifecycle rules, every status against every operation, with amounts
// at and past the limit. The database enforces them (apply_change in
// sql/common.sql) and Go explains a refusal (decide.go): were the two to
// disagree, the request would fail instead of getting the outcome below.
func TestLifecycleRules(t *testing.T) {
	t.Parallel()
	// Each status is reached from a payment of 10.00: captured 10.00, and
	// refunded 4.00 or all of it.
	reach := map[payments.Status]func(b *bundle, t *testing.T, key string) payments.Payment{
		payments.StatusAuthorized: func(b *bundle, t *testing.T, key string) payments.Payment { return b.authorized(t, key, "10") },
		payments.StatusCaptured:   func(b *bundle, t *testing.T, key string) payments.Payment { return b.captured(t, key, "10") },
		payments.StatusPartiallyRefunded: func(b *bundle, t *testing.T, key string) payments.Payment {
			p := b.captured(t, key, "10")
			return must(t)(b.refund(t, p.ID, key+"-r", ptr("4"))).Payment
		},
		payments.StatusRefunded: func(b *bundle, t *testing.T, key string) payments.Payment {
			p := b.captured(t, key, "10")
			return must(t)(b.refund(t, p.ID, key+"-r", nil)).Payment
		},
		payments.StatusCanceled: func(b *bundle, t *testing.T, key string) payments.Payment {
			p := b.authorized(t, key, "10")
			return must(t)(b.cancel(t, p.ID, key+"-c")).Payment
		},
	}
	type op struct {
		name   string
		amount *string
		run    func(b *bundle, t *testing.T, id, key string, amount *string) (payments.ChangeResult, error)
	}
	capture := func(b *bundle, t *testing.T, id, key string, a *string) (payments.ChangeResult, error) {
		return b.capture(t, id, key, a)
	}
	cancel := func(b *bundle, t *testing.T, id, key string, _ *string) (payments.ChangeResult, error) {
		return b.cancel(t, id, key)
	}
	refund := func(b *bundle, t *testing.T, id, key string, a *string) (payments.ChangeResult, error) {
		return b.refund(t, id, key, a)
	}
	ops := []op{
		{"capture all", nil, capture}, {"capture 10", ptr("10"), capture}, {"capture 10.01", ptr("10.01"), capture},
		{"cancel", nil, cancel},
		{"refund all", nil, refund}, {"refund 6", ptr("6"), refund}, {"refund 6.01", ptr("6.01"), refund},
		{"refund 10", ptr("10"), refund},
	}
	// want[status][op]: "ok", "state" or "amount".
	want := map[payments.Status][]string{
		payments.StatusAuthorized:        {"ok", "ok", "amount", "ok", "state", "state", "state", "state"},
		payments.StatusCaptured:          {"state", "state", "state", "state", "ok", "ok", "ok", "ok"},
		payments.StatusPartiallyRefunded: {"state", "state", "state", "state", "ok", "ok", "amount", "amount"},
		payments.StatusRefunded:          {"state", "state", "state", "state", "state", "state", "state", "state"},
		payments.StatusCanceled:          {"state", "state", "state", "state", "state", "state", "state", "state"},
	}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, status := range payments.Statuses {
			if _, ok := want[status]; !ok {
				continue // reached only through a processor
			}
			for i, o := range ops {
				key := fmt.Sprintf("%s-%d", status, i)
				p := reach[status](b, t, key)
				if p.Status != status {
					t.Fatalf("setup reached %s, want %s", p.Status, status)
				}
				_, err := o.run(b, t, p.ID, key+"-op", o.amount)
				got := "ok"
				switch {
				case errors.Is(err, payments.ErrStateConflict):
					got = "state"
				case errors.Is(err, payments.ErrAmountExceeds):
					got = "amount"
				case err != nil:
					got = err.Error()
				}
				if got != want[status][i] {
					t.Errorf("%s on a %s payment: %s, want %s", o.name, status, got, want[status][i])
				}
			}
		}
	})
}

// A key stored under fingerprint version 1, before the lifecycle, still
// replays: the request is compared under the key's own version.
func TestVersion1KeyStillReplays(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		first := b.mustCreate(t, pix("old-key"))
		// What version 1 stored: its fingerprint (TestFingerprintV1IsPinned),
		// no operation parameters.
		const v1 = "81d1409805f0a008ce558c3441029c7d9100fc6c0a8e1f7c05d509b2dac9824d"
		fp := make([]byte, 32)
		fmt.Sscanf(v1, "%x", &fp)
		if err := db.Gorm.Exec(`UPDATE idempotency_keys SET fingerprint = ?, fingerprint_version = 1, params = NULL
			WHERE idempotency_key = 'old-key'`, fp).Error; err != nil {
			t.Fatal(err)
		}
		for _, amount := range []string{"10.50", "10.5"} {
			res := b.mustCreate(t, request("client-1", "old-key", amount, "brl", payments.MethodPix))
			if !res.Replayed || res.Payment.ID != first.Payment.ID {
				t.Fatalf("retry with a version 1 key: %+v, want a replay of %s", res, first.Payment.ID)
			}
		}
		authorizeOnly := pix("old-key")
		authorizeOnly.Capture = ptr(false)
		_, err := b.svc.Create(t.Context(), authorizeOnly)
		wantReused(t, err, first.Payment.ID, "capture")
		_, err = b.svc.Create(t.Context(), request("client-1", "old-key", "11", "BRL", payments.MethodPix))
		wantReused(t, err, first.Payment.ID, "amount")
		_, err = b.refund(t, first.Payment.ID, "old-key", nil)
		wantReused(t, err, first.Payment.ID, "operation")
	})
}

// The invariants under concurrency, decided by the database: refunds never
// add up to more than was captured; one key is applied once; of a capture
// and a cancel, one wins.
func TestLifecycleRaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)

		t.Run("20 refunds of 10.00 on 100.00", func(t *testing.T) {
			p := b.captured(t, "race-refunds", "100")
			results := make([]error, 20)
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() { _, results[i] = b.refund(t, p.ID, fmt.Sprintf("race-refund-%d", i), ptr("10.00")) })
			}
			wg.Wait()
			applied, exceeded := 0, 0
			for _, err := range results {
				switch {
				case err == nil:
					applied++
				case errors.Is(err, payments.ErrAmountExceeds), errors.Is(err, payments.ErrStateConflict):
					// Refused for the amount while something is left, for
					// the status once the winners have refunded it all.
					exceeded++
				default:
					t.Errorf("refund: %v", err)
				}
			}
			if applied != 10 || exceeded != 10 {
				t.Errorf("%d applied, %d refused; want 10 and 10", applied, exceeded)
			}
			wantState(t, b.mustGet(t, p.ID), payments.StatusRefunded, "100.00", "100.00")
			refunds, _ := b.svc.Refunds(t.Context(), p)
			var sum int64
			for _, r := range refunds {
				sum += r.Amount.Minor
			}
			if len(refunds) != 10 || sum != 10000 {
				t.Errorf("%d refunds summing to %d minor units, want 10 summing to 10000", len(refunds), sum)
			}
		})

		t.Run("16 requests with one refund key", func(t *testing.T) {
			p := b.captured(t, "race-key", "100")
			ids := make([]string, 16)
			replays := make([]bool, 16)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					res, err := b.refund(t, p.ID, "one-refund-key", ptr("10"))
					if err != nil {
						t.Error(err)
						return
					}
					ids[i], replays[i] = res.Refund.ID, res.Replayed
				})
			}
			wg.Wait()
			firsts := 0
			for i := range ids {
				if ids[i] != ids[0] {
					t.Errorf("request %d got refund %s, request 0 %s", i, ids[i], ids[0])
				}
				if !replays[i] {
					firsts++
				}
			}
			if firsts != 1 {
				t.Errorf("%d requests say they refunded, want 1", firsts)
			}
			wantState(t, b.mustGet(t, p.ID), payments.StatusPartiallyRefunded, "100.00", "10.00")
		})

		t.Run("capture and cancel at once", func(t *testing.T) {
			for round := range 10 {
				p := b.authorized(t, fmt.Sprintf("race-auth-%d", round), "10")
				var capErr, cancelErr error
				var wg sync.WaitGroup
				wg.Go(func() { _, capErr = b.capture(t, p.ID, fmt.Sprintf("race-cap-%d", round), nil) })
				wg.Go(func() { _, cancelErr = b.cancel(t, p.ID, fmt.Sprintf("race-cancel-%d", round)) })
				wg.Wait()
				final := b.mustGet(t, p.ID)
				switch {
				case capErr == nil && errors.Is(cancelErr, payments.ErrStateConflict):
					wantState(t, final, payments.StatusCaptured, "10.00", "0.00")
				case cancelErr == nil && errors.Is(capErr, payments.ErrStateConflict):
					wantState(t, final, payments.StatusCanceled, "0.00", "0.00")
				default:
					t.Errorf("capture: %v; cancel: %v; want exactly one to win", capErr, cancelErr)
				}
			}
		})
	})
}

// TestKeyOfAPaymentChangedInTheSameStatement: a refund that reuses the key
// of a payment another request of the same statement changes is left to
// the engine (held), never sent back to be tried again: under steady load
// it would meet the same neighbour round after round and end in an
// internal error. Through the engine it is IDEMPOTENCY_KEY_REUSED, and
// counted once.
func TestKeyOfAPaymentChangedInTheSameStatement(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		p1, p2 := b.captured(t, "same-stmt-1", "100"), b.captured(t, "same-stmt-2", "100")
		must(t)(b.refund(t, p1.ID, "kA", ptr("1")))
		reuse := payments.RefundRequest{PaymentID: p2.ID, Amount: ptr("1"), IdempotencyKey: "kA", Origin: payments.Origin{Transport: "test"}}
		neighbour := payments.RefundRequest{PaymentID: p1.ID, Amount: ptr("1"), IdempotencyKey: "kB", Origin: payments.Origin{Transport: "test"}}
		got, err := payments.ChangeStatementAnswers(t.Context(), b.svc, reuse, neighbour)
		if err != nil {
			t.Fatal(err)
		}
		// PostgreSQL's statement leaves it to the engine ("held, then
		// settled REJECTED"); SQLite's steps settle it in their
		// transaction: rejected either way, never sent again.
		if reuse, _, _ := strings.Cut(got[0], " ("); !strings.HasSuffix(reuse, "settled REJECTED") || got[1] != "settled APPLIED" {
			t.Fatalf("one statement answered %q; want the reused key rejected, never retried, and the neighbour applied", got)
		}
		p1now, err := b.svc.Get(t.Context(), p1.ID)
		if err != nil {
			t.Fatal(err)
		}
		attempts, err := b.svc.Attempts(t.Context(), p1now)
		if err != nil {
			t.Fatal(err)
		}
		rejected := 0
		for _, a := range attempts {
			if a.Outcome == payments.OutcomeRejected && a.IdempotencyKey == "kA" {
				rejected++
			}
		}
		if p1now.RejectedCount != 1 || rejected != 1 {
			t.Fatalf("the key's payment counts %d rejections and records %d; want 1 and 1", p1now.RejectedCount, rejected)
		}

		_, err = b.refund(t, p2.ID, "kA", ptr("1"))
		var reused *payments.KeyReusedError
		if !errors.As(err, &reused) {
			t.Fatalf("the reused key through the engine: %v, want IDEMPOTENCY_KEY_REUSED", err)
		}
		p, err := b.svc.Get(t.Context(), p1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Refunded.Minor != 200 || p.RejectedCount != 2 {
			t.Errorf("p1 refunded %d minor units with %d rejections, want 200 (kA and kB once each) and 2", p.Refunded.Minor, p.RejectedCount)
		}
	})
}

// TestReplayIsRecordedAfterTheUseItReplays: a request's time is read
// before it reaches the database, so a replay that waited while another
// instance used its key (and committed) carries a time from before that
// use. It is recorded just after the use instead, for creates and
// changes, on both paths that record replays (the batch statement, and Go
// for a key of the older fingerprint version): a history never shows a
// replay before what it replays.
func TestReplayIsRecordedAfterTheUseItReplays(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		// Another instance on the same database whose request times were
		// read a minute before the first instance's uses.
		late := &fakeClock{now: b.clock.Now().Add(-time.Minute)}
		other := mustService(t, db.Gorm, payments.Config{KeyTTL: testTTL, Now: late.Now})
		ctx := t.Context()

		p := b.mustCreate(t, pix("created-first")).Payment
		refund, err := b.svc.Refund(ctx, payments.RefundRequest{PaymentID: p.ID, Amount: ptr("1"), IdempotencyKey: "refunded-first"})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := other.Create(ctx, pix("created-first")); err != nil || !res.Replayed {
			t.Fatalf("replayed create: %+v %v", res, err)
		}
		if res, err := other.Refund(ctx, payments.RefundRequest{PaymentID: p.ID, Amount: ptr("1"), IdempotencyKey: "refunded-first"}); err != nil ||
			!res.Replayed || res.Refund.ID != refund.Refund.ID {
			t.Fatalf("replayed refund: %+v %v", res, err)
		}
		// A key of the older version (as TestVersion1KeyStillReplays stores
		// it) is replayed by Go, not by the statement.
		v1 := b.mustCreate(t, pix("old-key")).Payment
		fp := make([]byte, 32)
		fmt.Sscanf("81d1409805f0a008ce558c3441029c7d9100fc6c0a8e1f7c05d509b2dac9824d", "%x", &fp)
		if err := db.Gorm.Exec(`UPDATE idempotency_keys SET fingerprint = ?, fingerprint_version = 1, params = NULL
			WHERE idempotency_key = 'old-key'`, fp).Error; err != nil {
			t.Fatal(err)
		}
		if res, err := other.Create(ctx, pix("old-key")); err != nil || !res.Replayed {
			t.Fatalf("replay of a version 1 key: %+v %v", res, err)
		}

		for _, id := range []string{p.ID, v1.ID} {
			attempts := b.attempts(t, id)
			used := map[string]time.Time{}
			for _, a := range attempts {
				switch a.Outcome {
				case payments.OutcomeCreated, payments.OutcomeApplied:
					used[a.IdempotencyKey] = a.At
				}
			}
			for _, a := range attempts {
				if a.Outcome != payments.OutcomeReplayed && a.Outcome != payments.OutcomeRejected {
					continue
				}
				if first, ok := used[a.IdempotencyKey]; !ok || !a.At.After(first) {
					t.Errorf("%s of %s at %v; its key was first used at %v", a.Outcome, a.IdempotencyKey, a.At, first)
				}
			}
		}
	})
}
