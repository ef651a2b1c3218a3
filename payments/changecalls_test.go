package payments_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// sandboxChanges makes, through the sandbox, one payment of each change
// kind: one authorized and then canceled, one authorized, captured in part
// and refunded twice. It answers the two payments as they are after.
func sandboxChanges(t *testing.T, b *bundle) (canceled, refunded payments.Payment) {
	t.Helper()
	c := b.authorized(t, "calls-cancel", "20.00")
	must(t)(b.cancel(t, c.ID, "calls-cancel-1"))
	r := b.authorized(t, "calls-refund", "30.00")
	must(t)(b.capture(t, r.ID, "calls-capture-1", ptr("25.00")))
	must(t)(b.refund(t, r.ID, "calls-refund-1", ptr("5.00")))
	must(t)(b.refund(t, r.ID, "calls-refund-2", nil))
	return b.mustGet(t, c.ID), b.mustGet(t, r.ID)
}

// changeOpID is the processor operation the change under key was given
// (its key's processor_operation_id): the key its processor got is
// "cmpay_" and this.
func changeOpID(t *testing.T, b *bundle, key string) string {
	t.Helper()
	var k models.IdempotencyKey
	if err := b.db.Gorm.Where("client_id = ? AND idempotency_key = ?", "client-1", key).Take(&k).Error; err != nil {
		t.Fatalf("key %s: %v", key, err)
	}
	if k.ProcessorOperationID == nil {
		t.Fatalf("key %s names no processor operation", key)
	}
	return *k.ProcessorOperationID
}

// wantChangeCalls is what ProcessorCallsOf shows for p: the create's call,
// then one WRITE per applied change, SUCCEEDED, under its operation's key,
// at the time of its APPLIED attempt, 0 ms, no code, no record state.
func wantChangeCalls(t *testing.T, b *bundle, p payments.Payment) []payments.ProcessorCall {
	t.Helper()
	want := []payments.ProcessorCall{{Operation: payments.OpCreate, Kind: payments.CallWrite,
		ProcessorKey: "cmpay_op_" + strings.TrimPrefix(p.ID, "pay_"), Outcome: payments.CallSucceeded, At: p.CreatedAt}}
	for _, a := range b.attempts(t, p.ID) {
		if a.Outcome != payments.OutcomeApplied || a.Operation == payments.OpCreate {
			continue
		}
		want = append(want, payments.ProcessorCall{Operation: a.Operation, Kind: payments.CallWrite,
			ProcessorKey: "cmpay_" + changeOpID(t, b, a.IdempotencyKey), Outcome: payments.CallSucceeded, At: a.At})
	}
	return want
}

func checkCalls(t *testing.T, b *bundle, ps ...payments.Payment) {
	t.Helper()
	all, err := b.svc.ProcessorCallsOf(t.Context(), ps)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if want := wantChangeCalls(t, b, p); !slices.Equal(all[i], want) {
			t.Errorf("calls of %s\n got %+v\nwant %+v", p.ID, all[i], want)
		}
	}
}

// A sandbox capture, cancel or refund is answered before it is stored, and
// processorCalls shows its one call as it shows a create's: a WRITE,
// SUCCEEDED, under the key its operation was given, at the change's time,
// 0 ms, oldest first, whether read one payment at a time or as a page.
func TestSandboxChangeCallsRead(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		canceled, refunded := sandboxChanges(t, b)
		if canceled.Status != payments.StatusCanceled || refunded.Refunded.Minor != 2500 {
			t.Fatalf("the changes did not apply: %s, refunded %d", canceled.Status, refunded.Refunded.Minor)
		}
		checkCalls(t, b, canceled)
		checkCalls(t, b, refunded)
		checkCalls(t, b, refunded, canceled)
		if got := b.calls(t, refunded); !slices.Equal(got, []string{"CREATE_PAYMENT SUCCEEDED ",
			"CAPTURE_PAYMENT SUCCEEDED ", "REFUND_PAYMENT SUCCEEDED ", "REFUND_PAYMENT SUCCEEDED "}) {
			t.Errorf("the refunded payment's calls %q", got)
		}
		// A replay, a refusal and a rejection call nothing.
		must(t)(b.refund(t, refunded.ID, "calls-refund-1", ptr("5.00")))
		if _, err := b.capture(t, refunded.ID, "calls-capture-2", nil); err == nil {
			t.Fatal("a second capture was applied")
		}
		if _, err := b.refund(t, refunded.ID, "calls-refund-1", ptr("1.00")); err == nil {
			t.Fatal("a key reused for another amount was accepted")
		}
		if n := len(b.calls(t, b.mustGet(t, refunded.ID))); n != 4 {
			t.Errorf("%d calls after a replay, a refusal and a rejection, want 4", n)
		}
	})
}

// Payments changed before calls were read from attempts keep their call
// rows, and their APPLIED attempts name no operation: they read as they
// did, each call once, beside changes made since.
func TestSandboxChangeCallRowsStoredBeforeReadOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		canceled, refunded := sandboxChanges(t, b)
		// Made as they were stored before: the call row change_batch wrote,
		// the attempt without its request id. The refunded payment's last
		// refund is left as it is now.
		for _, p := range []payments.Payment{canceled, refunded} {
			for _, a := range b.attempts(t, p.ID) {
				if a.Outcome != payments.OutcomeApplied || a.Operation == payments.OpCreate || a.IdempotencyKey == "calls-refund-2" {
					continue
				}
				oldStyle(t, b, p.ID, a)
			}
		}
		checkCalls(t, b, canceled, refunded)
		if n := len(b.calls(t, refunded)); n != 4 {
			t.Errorf("%d calls of the refunded payment, want 4", n)
		}
	})
}

// oldStyle makes applied change a of payment id look as it was stored
// before: a processor_calls row, and an attempt that names no operation.
func oldStyle(t *testing.T, b *bundle, id string, a payments.Attempt) {
	t.Helper()
	op := changeOpID(t, b, a.IdempotencyKey)
	var rows int64
	if err := b.db.Gorm.Model(&models.ProcessorCall{}).Where("operation_id = ?", op).Count(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		row := models.ProcessorCall{OperationID: op, PaymentID: id, Operation: string(a.Operation), ProcessorKey: "cmpay_" + op,
			Kind: "WRITE", Outcome: "SUCCEEDED", At: a.At}
		if err := b.db.Gorm.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
	}
	err := b.db.Gorm.Exec(`UPDATE idempotency_attempts SET request_id = NULL WHERE payment_id = ? AND idempotency_key = ? AND outcome = 'APPLIED'`,
		id, a.IdempotencyKey).Error
	if err != nil {
		t.Fatal(fmt.Errorf("attempt of %s: %w", a.IdempotencyKey, err))
	}
}
