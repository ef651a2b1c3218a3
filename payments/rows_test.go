package payments

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestResultRowKey: a batch statement's row carries its key for a
// rejection and a held key, and none for a replay ({{rejected_held}}); a
// rejection or a held key without one is an error, never a nil key for
// the engine to dereference.
func TestResultRowKey(t *testing.T) {
	t.Parallel()
	withKey := func(r resultRow) resultRow {
		r.keyID, r.heldVersion = pgtype.Int8{Int64: 7, Valid: true}, pgtype.Int8{Int64: int64(fingerprintVersion), Valid: true}
		r.heldOp = pgtype.Text{String: string(OpCreate), Valid: true}
		r.heldPayment = pgtype.Text{String: "pay_1", Valid: true}
		r.heldFP = []byte{1, 2, 3}
		return r
	}
	row := func(outcome string) resultRow {
		return resultRow{n: 1, outcome: outcome, id: pgtype.Text{String: "pay_1", Valid: true},
			currency: pgtype.Text{String: "BRL", Valid: true}, amount: pgtype.Int8{Int64: 1000, Valid: true}}
	}
	for _, tc := range []struct {
		name    string
		row     resultRow
		wantKey bool
		wantErr string
	}{
		{"replay without its key", row(string(OutcomeReplayed)), false, ""},
		{"rejection with its key", withKey(row(string(OutcomeRejected))), true, ""},
		{"held key", withKey(row(rowHeld)), true, ""},
		{"rejection without its key", row(string(OutcomeRejected)), false, "names no key"},
		{"held without its key", row(rowHeld), false, "names no key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.row.answer(&command{op: OpCreate}, time.Now())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("answer() = %+v, %v; want an error with %q", a, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (a.held != nil) != tc.wantKey {
				t.Errorf("answer().held = %+v, want a key: %v", a.held, tc.wantKey)
			}
			if tc.wantKey && (a.held.id != 7 || a.held.paymentID != "pay_1" || a.held.operation != OpCreate) {
				t.Errorf("answer().held = %+v", a.held)
			}
		})
	}
}

// TestResultRowCreated: a CREATED row carries nothing of its payment; the
// answer is the payment the request makes at the statement's time, and a
// CREATED row for anything but a create is an error.
func TestResultRowCreated(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 16, 0, 0, 123456000, time.UTC)
	create := &command{op: OpCreate, key: "k1", clientID: "c1", newID: "pay_1",
		amount: Money{Minor: 1050, Currency: "BRL"}, method: "PIX", capture: true}
	authorize := *create
	authorize.capture = false
	for _, tc := range []struct {
		name string
		cmd  *command
		want Payment
	}{
		{"captured", create, Payment{ID: "pay_1", ClientID: "c1", IdempotencyKey: "k1", Amount: create.amount,
			Method: "PIX", CreatedAt: now, Status: StatusCaptured, Captured: create.amount,
			Refunded: Money{Currency: "BRL"}, CapturedAt: now}},
		{"authorized", &authorize, Payment{ID: "pay_1", ClientID: "c1", IdempotencyKey: "k1", Amount: create.amount,
			Method: "PIX", CreatedAt: now, Status: StatusAuthorized, Captured: Money{Currency: "BRL"},
			Refunded: Money{Currency: "BRL"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resultRow{n: 1, outcome: string(OutcomeCreated)}
			a, err := r.answer(tc.cmd, now)
			if err != nil {
				t.Fatal(err)
			}
			if a.kind != answerSettled || a.outcome != OutcomeCreated || a.payment != tc.want {
				t.Errorf("answer() = %+v, want CREATED with %+v", a, tc.want)
			}
		})
	}
	r := resultRow{n: 1, outcome: string(OutcomeCreated)}
	if a, err := r.answer(&command{op: OpRefund}, now); err == nil {
		t.Errorf("answer() of a CREATED row for a refund = %+v, want an error", a)
	}
}
