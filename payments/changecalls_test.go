package payments_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
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

// A sandbox change's call is not stored as a row of its own: processorCalls
// reads it from the change's APPLIED attempt, which names its operation. A
// create or change the sandbox answers late (pm_sandbox_slow's first send)
// keeps its rows.
func TestSandboxChangesStoreNoCallRow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		canceled, refunded := sandboxChanges(t, b)
		for _, p := range []payments.Payment{canceled, refunded} {
			var rows int64
			if err := db.Gorm.Model(&models.ProcessorCall{}).Where("payment_id = ?", p.ID).Count(&rows).Error; err != nil || rows != 0 {
				t.Errorf("%s: %d processor_calls rows (%v), want none", p.ID, rows, err)
			}
		}

		cfg := processor.DefaultConfig()
		cfg.Timeout = testTimeout
		slow := processorSetup(t, db, sandbox.New(cfg))
		req := withToken(card("calls-slow"), sandbox.TokenSlow)
		req.Capture = ptr(false)
		p := slow.mustCreate(t, req).Payment
		if p.Status != payments.StatusProcessing {
			t.Fatalf("the slow token's create is %s, want PROCESSING", p.Status)
		}
		slow.clock.Advance(testRecovery + time.Second)
		if n, err := slow.svc.RecoverDue(t.Context()); err != nil || n != 1 {
			t.Fatalf("RecoverDue = %d, %v; want 1", n, err)
		}
		must(t)(slow.capture(t, p.ID, "calls-slow-capture", nil))
		var stored []models.ProcessorCall
		if err := db.Gorm.Where("payment_id = ?", p.ID).Order("id").Find(&stored).Error; err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, c := range stored {
			ops = append(ops, c.Operation+" "+c.Outcome)
		}
		if want := []string{"CREATE_PAYMENT UNKNOWN", "CREATE_PAYMENT SUCCEEDED"}; !slices.Equal(ops, want) {
			t.Errorf("the slow payment's stored calls %q, want %q", ops, want)
		}
		if got, want := slow.calls(t, slow.mustGet(t, p.ID)), []string{"CREATE_PAYMENT UNKNOWN timeout",
			"CREATE_PAYMENT SUCCEEDED ", "CAPTURE_PAYMENT SUCCEEDED "}; !slices.Equal(got, want) {
			t.Errorf("the slow payment's calls %q, want %q", got, want)
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

// A foreseen change's call given a row back, by the statement run before a
// rollback to a build that reads only rows, reads once, though its attempt
// still names its operation: admin attempts are append-only, so the
// attempt cannot be made to name none.
func TestSandboxChangeCallGivenRowBackReadsOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		canceled, refunded := sandboxChanges(t, b)
		// The statement docs/operations/postgresql.md gives for a rollback.
		if err := db.Gorm.Exec(rollbackChangeCallsSQL(t)).Error; err != nil {
			t.Fatal(err)
		}
		var rows int64
		if err := db.Gorm.Model(&models.ProcessorCall{}).Count(&rows).Error; err != nil || rows != 4 {
			t.Fatalf("%d call rows given back (%v), want 4", rows, err)
		}
		checkCalls(t, b, canceled, refunded)
		// Run twice, it gives none twice.
		if err := db.Gorm.Exec(rollbackChangeCallsSQL(t)).Error; err != nil {
			t.Fatal(err)
		}
		checkCalls(t, b, canceled, refunded)
	})
}

// oldStyle makes applied change a of payment id look as it was stored
// before: a processor_calls row, and an attempt that names no operation.
func oldStyle(t *testing.T, b *bundle, id string, a payments.Attempt) {
	t.Helper()
	rowBack(t, b, id, a)
	err := b.db.Gorm.Exec(`UPDATE idempotency_attempts SET request_id = NULL WHERE payment_id = ? AND idempotency_key = ? AND outcome = 'APPLIED'`,
		id, a.IdempotencyKey).Error
	if err != nil {
		t.Fatal(fmt.Errorf("attempt of %s: %w", a.IdempotencyKey, err))
	}
}

// rowBack gives applied change a of payment id its processor_calls row,
// as change_batch wrote it before, unless it has one.
func rowBack(t *testing.T, b *bundle, id string, a payments.Attempt) {
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
}

// rollbackChangeCallsSQL is the statement of docs/operations/postgresql.md
// that gives foreseen changes' calls rows of their own.
func rollbackChangeCallsSQL(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/operations/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	for stmt := range strings.SplitSeq(string(doc), ";") {
		if i := strings.Index(stmt, "INSERT INTO processor_calls"); i >= 0 && strings.Contains(stmt, "FROM idempotency_attempts a") {
			return stmt[i:]
		}
	}
	t.Fatal("docs/operations/postgresql.md gives no statement for the changes' calls")
	return ""
}
