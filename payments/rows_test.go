package payments

import (
	"strings"
	"testing"

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
			a, err := tc.row.answer()
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
