package payments

import (
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/internal/sqlq/sqlqtest"
)

// TestEveryStatementIsUsed: every statement of sql/*.sql loads (the sets
// are loaded when the package starts) and is run by the package's code,
// so that none stays behind untested when the code stops running it.
func TestEveryStatementIsUsed(t *testing.T) {
	t.Parallel()
	sqlqtest.AllUsed(t, commonSQL, postgresSQL, sqliteSQL)
}

// TestEveryFragmentIsExpanded: no statement, as a store runs it, still
// holds a {{fragment}} that expand does not know.
func TestEveryFragmentIsExpanded(t *testing.T) {
	t.Parallel()
	for _, set := range []sqlq.Statements{postgresSQL, sqliteSQL} {
		for _, name := range set.Names() {
			if q := expand(set, set.SQL(name)); strings.Contains(q, "{{") {
				t.Errorf("statement %s keeps a fragment after expand: %s", name, q)
			}
		}
	}
}

// The sweep keeps exactly the keys whose payments Payment.inFlight says
// have work at their processor: SQL's payment_in_flight and Go's agree on
// every way a payment can have some, and on settled payments.
func TestSweepAndRequestsAgreeOnWhatIsInFlight(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		s, err := NewService(db.Gorm, Config{KeyTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{
			"processing": "UPDATE payments SET status = 'PROCESSING' WHERE id = ?",
			"pending":    "UPDATE payments SET status = 'PENDING' WHERE id = ?",
			"capturing":  "UPDATE payments SET status = 'AUTHORIZED', pending_operation = 'CAPTURE_PAYMENT' WHERE id = ?",
			"refunding":  "UPDATE payments SET reserved_minor = 100 WHERE id = ?",
			"declined":   "UPDATE payments SET status = 'DECLINED' WHERE id = ?",
			"captured":   "",
		}
		paymentOf := map[string]string{}
		for key, update := range states {
			res, err := s.Create(t.Context(), CreateRequest{ClientID: "c", IdempotencyKey: key, Amount: "10", Currency: "BRL",
				Method: MethodCreditCard, Origin: Origin{Transport: "test"}})
			if err != nil {
				t.Fatal(err)
			}
			paymentOf[key] = res.Payment.ID
			if update != "" {
				if err := db.Gorm.Exec(update, res.Payment.ID).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		old := time.Now().Add(-48 * time.Hour)
		if err := db.Gorm.Exec("UPDATE idempotency_keys SET created_at = ?", old).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := s.SweepExpiredKeys(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
		for key, id := range paymentOf {
			p, err := s.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var kept int64
			if err := db.Gorm.Table("idempotency_keys").Where("idempotency_key = ?", key).Count(&kept).Error; err != nil {
				t.Fatal(err)
			}
			if (kept == 1) != p.inFlight() {
				t.Errorf("%s: key kept %v, but inFlight says %v", key, kept == 1, p.inFlight())
			}
		}
	})
}
