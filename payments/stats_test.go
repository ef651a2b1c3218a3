package payments_test

import (
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// The overview counts the work that waits whatever its age: a Pix created
// 30 hours ago and still PENDING read "0 waiting for their payer", and
// captures and refunds the processor had not answered were not counted.
// What ended unpaid is counted over the window only.
func TestRecentStatsCountWaitingWorkOfAnyAge(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := asyncSandboxSetup(t, db)
		b.mustCreate(t, request("client-1", "pix-a", "1.00", "BRL", payments.MethodPix))
		b.mustCreate(t, request("client-1", "pix-b", "1.00", "BRL", payments.MethodPix))
		b.mustCreate(t, withToken(card("declined-old"), "pm_card_chargeDeclined"))
		b.clock.Advance(30 * time.Hour)
		b.mustCreate(t, withToken(card("declined"), "pm_card_chargeDeclined"))
		now := b.clock.Now()
		settled := now
		for i, op := range []payments.Operation{payments.OpCapture, payments.OpRefund, payments.OpRefund, payments.OpCancel} {
			row := models.ProcessorOperation{ID: "op_" + string(rune('a'+i)), PaymentID: "pay_x", Operation: string(op), Processor: "sandbox",
				Key: "cmpay_op", Currency: "BRL", State: "UNKNOWN", NextTryAt: now, CreatedAt: now.Add(-48 * time.Hour)}
			if op == payments.OpCancel {
				row.State, row.SettledAt = "SUCCEEDED", &settled
			}
			if err := db.Gorm.Create(&row).Error; err != nil {
				t.Fatal(err)
			}
		}
		st, err := b.svc.RecentStats(t.Context(), 24)
		if err != nil {
			t.Fatal(err)
		}
		if st.Unsettled[payments.StatusPending] != 2 || len(st.Unsettled) != 1 {
			t.Errorf("unsettled %v, want 2 PENDING created 30 hours ago", st.Unsettled)
		}
		if st.Unpaid[payments.StatusDeclined] != 1 || len(st.Unpaid) != 1 {
			t.Errorf("unpaid %v, want the 1 DECLINED of the window", st.Unpaid)
		}
		if st.Waiting[payments.OpCapture] != 1 || st.Waiting[payments.OpRefund] != 2 || len(st.Waiting) != 2 {
			t.Errorf("waiting %v, want 1 capture and 2 refunds (the settled cancel not)", st.Waiting)
		}
	})
}
