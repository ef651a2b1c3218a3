package payments

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestResultRowKey: a batch statement's HELD row carries its key, and a
// REPLAYED row none; a HELD row without one is an error, never a nil key
// for the engine to dereference. A REJECTED row (create_batch's) carries
// its payment and the key, for the fields that differ; for anything but a
// create it is an error, as the change statement settles no rejection.
func TestResultRowKey(t *testing.T) {
	t.Parallel()
	// The held key as PostgreSQL's json_build_object writes it, its time
	// in the session's time zone: UTC, or any other.
	withKeyAt := func(r resultRow, createdAt string) resultRow {
		r.held = pgtype.Text{Valid: true, String: `{"id" : 7, "operation" : "CREATE_PAYMENT", ` +
			`"params" : "{\"amount\":\"10\",\"operation\":\"CREATE_PAYMENT\"}", "fingerprint" : "0102ff", ` +
			`"version" : 2, "created_at" : "` + createdAt + `", "payment_id" : "pay_1", "refund_id" : null}`}
		return r
	}
	withKey := func(r resultRow) resultRow { return withKeyAt(r, "2026-12-03T16:00:00.123456+00:00") }
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
		{"held key", withKey(row(rowHeld)), true, ""},
		{"held key without its payment", withKey(resultRow{n: 1, outcome: rowHeld}), true, ""},
		{"held key's time in another zone", withKeyAt(row(rowHeld), "2026-12-03T21:30:00.123456+05:30"), true, ""},
		{"rejection", withKey(row(string(OutcomeRejected))), true, ""},
		{"held without its key", row(rowHeld), false, "names no key"},
		{"rejection without its key", row(string(OutcomeRejected)), false, "names no key"},
		{"rejection without its payment", withKey(resultRow{n: 1, outcome: string(OutcomeRejected)}), false, "names no payment"},
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
			if tc.row.outcome == string(OutcomeRejected) && (a.kind != answerSettled || a.outcome != OutcomeRejected) {
				t.Errorf("answer() = %+v, want a settled rejection", a)
			}
			if (a.held != nil) != tc.wantKey {
				t.Errorf("answer().held = %+v, want a key: %v", a.held, tc.wantKey)
			}
			if !tc.wantKey {
				return
			}
			want := heldKey{id: 7, operation: OpCreate, params: Params{FieldAmount: "10", FieldOperation: string(OpCreate)},
				fp: []byte{1, 2, 0xff}, version: 2, createdAt: time.Date(2026, 12, 3, 16, 0, 0, 123456000, time.UTC),
				paymentID: "pay_1"}
			got := *a.held
			if !got.createdAt.Equal(want.createdAt) {
				t.Errorf("held key created at %v, want %v", got.createdAt, want.createdAt)
			}
			got.createdAt = want.createdAt
			if !reflect.DeepEqual(got, want) {
				t.Errorf("answer().held = %+v, want %+v", got, want)
			}
		})
	}
}

// TestResultRowRejectionOfAChange: only create_batch settles a rejection;
// a REJECTED row for a capture is an error, not an answer.
func TestResultRowRejectionOfAChange(t *testing.T) {
	t.Parallel()
	r := resultRow{n: 1, outcome: string(OutcomeRejected), held: pgtype.Text{Valid: true, String: `{"id": 7}`}}
	if a, err := r.answer(&command{op: OpCapture}, time.Now()); err == nil {
		t.Fatalf("answer() = %+v, nil; want an error", a)
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
			Refunded: Money{Currency: "BRL"}, CapturedAt: now, Processor: "sandbox", Reserved: Money{Currency: "BRL"}}},
		{"authorized", &authorize, Payment{ID: "pay_1", ClientID: "c1", IdempotencyKey: "k1", Amount: create.amount,
			Method: "PIX", CreatedAt: now, Status: StatusAuthorized, Captured: Money{Currency: "BRL"},
			Refunded: Money{Currency: "BRL"}, Processor: "sandbox", Reserved: Money{Currency: "BRL"}}},
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
