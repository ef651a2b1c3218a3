package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// TestRefundAsOf: a refund at a time is what its stored times say it was
// then: not there before it was made, PROCESSING until settled, SUCCEEDED
// until returned.
func TestRefundAsOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { v := t0.Add(time.Duration(s) * time.Second); return &v }
	code := "expired_or_canceled_card"
	returned := models.Refund{ID: "ref_1", CreatedAt: t0, Status: "FAILED", FailureCode: &code, SettledAt: at(10), ReturnedAt: at(20)}
	failed := models.Refund{ID: "ref_2", CreatedAt: t0, Status: "FAILED", FailureCode: &code, SettledAt: at(10)}
	sandbox := models.Refund{ID: "ref_3", CreatedAt: t0, Status: "SUCCEEDED"}
	old := models.Refund{ID: "ref_4", CreatedAt: t0} // read before refunds had a status
	pending := models.Refund{ID: "ref_5", CreatedAt: t0, Status: "PROCESSING"}
	for _, c := range []struct {
		row    models.Refund
		at     int
		listed bool
		status payments.RefundStatus
		code   string
	}{
		{returned, -1, false, "", ""},
		{returned, 0, true, payments.RefundProcessing, ""},
		{returned, 9, true, payments.RefundProcessing, ""},
		{returned, 10, true, payments.RefundSucceeded, ""},
		{returned, 19, true, payments.RefundSucceeded, ""},
		{returned, 20, true, payments.RefundFailed, code},
		{failed, 5, true, payments.RefundProcessing, ""},
		{failed, 10, true, payments.RefundFailed, code},
		{sandbox, 0, true, payments.RefundSucceeded, ""},
		{old, 0, true, payments.RefundSucceeded, ""},
		{pending, 100, true, payments.RefundProcessing, ""},
	} {
		r, ok := payments.RefundAsOf(c.row, "BRL", *at(c.at))
		if ok != c.listed || ok && (r.Status != c.status || r.FailureCode != c.code || r.ReturnedAt.IsZero() != (c.code == "" || c.row.ReturnedAt == nil)) {
			t.Errorf("%s at +%ds: listed %v, %s %q returned %v; want listed %v, %s %q", c.row.ID, c.at, ok, r.Status, r.FailureCode,
				r.ReturnedAt, c.listed, c.status, c.code)
		}
	}
}
