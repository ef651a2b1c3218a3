package staff_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/staff"
)

// BenchmarkSession times what every admin request costs the staff store:
// the session check (a read by primary key joined to the account), on
// both databases.
//
//	go test -run '^$' -bench Session ./staff/
func BenchmarkSession(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			s := benchStore(b, db)
			if _, err := s.Add(b.Context(), admin, "alice", staff.Operator, "alice-password-1"); err != nil {
				b.Fatal(err)
			}
			token, _, err := s.SignIn(b.Context(), staff.SignInRequest{Username: "alice", Password: "alice-password-1"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Session(b.Context(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAuditLog times the audit page's read (a page of 50, newest
// first) over 20,000 entries of 50 staff and 2,000 captures and refunds
// made in the admin, on both databases: unfiltered, one staff member's,
// one action of the audit table's, and the refunds (the payments side).
//
//	go test -run '^$' -bench AuditLog ./staff/
func BenchmarkAuditLog(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			s := benchStore(b, db)
			seedAuditLog(b, db, 20_000, 2_000)
			for _, f := range []struct {
				name string
				f    staff.AuditFilter
			}{
				{"all", staff.AuditFilter{}},
				{"one-staff", staff.AuditFilter{Actor: "staff-7"}},
				{"sign-ins", staff.AuditFilter{Action: staff.ActSignIn}},
				{"refunds", staff.AuditFilter{Action: staff.ActRefund}},
			} {
				b.Run(f.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						page, err := s.AuditLog(b.Context(), f.f, 50, "")
						if err != nil {
							b.Fatal(err)
						}
						if len(page.Entries) != 50 {
							b.Fatalf("%d entries, want 50", len(page.Entries))
						}
					}
				})
			}
		})
	}
}

// benchStore is a store with hashing made cheap: the benchmarks time the
// database, not argon2id.
func benchStore(b *testing.B, db dbtest.DB) *staff.Store {
	b.Helper()
	s := staff.New(db.Gorm, staff.Config{Hash: cheap})
	b.Cleanup(s.Close)
	return s
}

// seedAuditLog writes n audit entries 150 s apart, going back from now,
// by 50 staff, and m admin captures and refunds among them.
func seedAuditLog(b *testing.B, db dbtest.DB, n, m int) {
	b.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	actions := []staff.Action{staff.ActSignIn, staff.ActSignOut, staff.ActExport, staff.ActSignIn, staff.ActPasswordChange}
	entries := make([]models.StaffAuditEntry, n)
	for i := range entries {
		who := fmt.Sprintf("staff-%d", i%50)
		entries[i] = models.StaffAuditEntry{At: now.Add(-time.Duration(i) * 150 * time.Second), Actor: who,
			Address: "10.0.0.1", Action: string(actions[i%len(actions)]), Target: who, Outcome: staff.OutcomeOK}
	}
	if err := db.Gorm.CreateInBatches(entries, 500).Error; err != nil {
		b.Fatal(err)
	}
	params := `{"amount":"1"}`
	attempts := make([]models.IdempotencyAttempt, m)
	for i := range attempts {
		op := []string{"REFUND_PAYMENT", "CAPTURE_PAYMENT"}[i%2]
		attempts[i] = models.IdempotencyAttempt{PaymentID: fmt.Sprintf("pay_%d", i), Operation: op, Outcome: "APPLIED",
			At: now.Add(-time.Duration(i)*1500*time.Second - time.Second), Params: &params, Transport: "admin",
			Actor: fmt.Sprintf("staff-%d", i%50), ActorAddress: "10.0.0.1"}
	}
	if err := db.Gorm.CreateInBatches(attempts, 500).Error; err != nil {
		b.Fatal(err)
	}
}
