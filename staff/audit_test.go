package staff_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

func ptr(s string) *string { return &s }

// TestAuditLogMergesPaymentActions: the audit page reads the admin's
// captures, cancels and refunds from the payments engine's attempts (written
// in the same statement as each change) beside the audit table's own
// entries, as one log, newest first, paged without loss or repetition even
// when entries of both share an instant; requests through the APIs are not
// staff actions and stay out.
func TestAuditLogMergesPaymentActions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		ctx := context.Background()
		c := newClock()
		s := newStore(t, db, c)
		svc, err := payments.NewService(db.Gorm, payments.Config{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		alice := payments.Origin{Transport: "admin", Actor: "alice", Address: "198.51.100.7"}
		created, err := svc.Create(ctx, payments.CreateRequest{ClientID: "shop", Amount: "50", Currency: "BRL",
			Method: payments.MethodPix, IdempotencyKey: "order-1", Origin: payments.Origin{Transport: "graphql"}})
		if err != nil {
			t.Fatal(err)
		}
		id := created.Payment.ID
		if err := s.Record(ctx, staff.Actor{Username: "alice", Address: "198.51.100.7"}, staff.ActSignIn, "alice", staff.OutcomeOK, ""); err != nil {
			t.Fatal(err)
		}
		// Same instant as the sign-in: the cursor must tell them apart.
		refund := payments.RefundRequest{PaymentID: id, Amount: ptr("10.5"), Reason: ptr("customer asked"), IdempotencyKey: "admin-k1", Origin: alice}
		if _, err := svc.Refund(ctx, refund); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Second)
		if res, err := svc.Refund(ctx, refund); err != nil || !res.Replayed {
			t.Fatalf("double submit: %+v %v", res, err)
		}
		c.Add(time.Second)
		if _, err := svc.Refund(ctx, payments.RefundRequest{PaymentID: id, Amount: ptr("100"), IdempotencyKey: "admin-k2", Origin: alice}); err == nil {
			t.Fatal("refunded more than captured")
		}
		if _, err := svc.Capture(ctx, payments.CaptureRequest{PaymentID: id, IdempotencyKey: "admin-k3",
			Origin: payments.Origin{Transport: "admin", Actor: "bob", Address: "198.51.100.8"}}); err == nil {
			t.Fatal("captured a captured payment")
		}
		// Through the API: not a staff action.
		if _, err := svc.Refund(ctx, payments.RefundRequest{PaymentID: id, Amount: ptr("1"), IdempotencyKey: "api-1", Origin: payments.Origin{Transport: "rest"}}); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
		// Recorded for a client that has gone away: written all the same.
		gone, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Record(gone, staff.Actor{Username: "bob", Address: "198.51.100.8"}, staff.ActExport, "/admin/payments.csv", staff.OutcomeOK, "3 rows"); err != nil {
			t.Fatal(err)
		}

		line := func(e staff.Entry) string {
			return strings.Join([]string{string(e.Action), e.Actor, e.Address, e.Target, e.Outcome, e.Detail}, "|")
		}
		want := []string{
			"export|bob|198.51.100.8|/admin/payments.csv|ok|3 rows",
			"capture|bob|198.51.100.8|" + id + "|refused|all available; the payment's status did not allow it",
			"refund|alice|198.51.100.7|" + id + "|refused|100.00 BRL; more than was available",
			"refund|alice|198.51.100.7|" + id + "|already done (replayed)|10.50 BRL; reason: customer asked",
			"sign-in|alice|198.51.100.7|alice|ok|",
			"refund|alice|198.51.100.7|" + id + "|applied|10.50 BRL; reason: customer asked",
		}
		check := func(name string, f staff.AuditFilter, want []string) {
			t.Helper()
			var got []string
			for _, e := range entries(t, s, f) { // pages of 3
				got = append(got, line(e))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		check("everything", staff.AuditFilter{}, want)
		check("alice", staff.AuditFilter{Actor: "alice"}, want[2:])
		check("refunds", staff.AuditFilter{Action: staff.ActRefund}, []string{want[2], want[3], want[5]})
		check("exports", staff.AuditFilter{Action: staff.ActExport}, want[:1])
		check("before the export", staff.AuditFilter{To: c.Now()}, want[1:])
		check("from the export", staff.AuditFilter{From: c.Now()}, want[:1])

		if _, err := s.AuditLog(ctx, staff.AuditFilter{}, 10, "bogus"); err == nil {
			t.Error("a made-up cursor was accepted")
		}
	})
}
