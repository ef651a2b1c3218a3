package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// /admin?waiting=1 lists the payments with a capture, cancel or refund
// the processor has not settled, each row saying which, and so does its
// CSV: the overview counted them with no way to see which. Their state is
// set on stored payments, since only the engine with a processor that
// does not answer reaches it.
func TestAdminListsPaymentsWaitingForTheProcessor(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		b.create(t, "settled", input("c", "5", "BRL", "CREDIT_CARD"))
		capturing := b.create(t, "capturing", input("c", "5", "BRL", "CREDIT_CARD")).Payment.ID
		refunding := b.create(t, "refunding", input("c", "5", "BRL", "CREDIT_CARD")).Payment.ID
		for id, set := range map[string]map[string]any{
			capturing: {"status": "AUTHORIZED", "captured_minor": 0, "pending_operation": "CAPTURE_PAYMENT"},
			refunding: {"reserved_minor": 150},
		} {
			if err := db.Gorm.Model(&models.Payment{}).Where("id = ?", id).Updates(set).Error; err != nil {
				t.Fatal(err)
			}
		}
		res, doc := b.adminPage(t, "/admin?waiting=1")
		if keys := rowKeys(doc); res.StatusCode != http.StatusOK || keys != "refunding,capturing" {
			t.Fatalf("/admin?waiting=1: %d, rows %q, want refunding,capturing", res.StatusCode, keys)
		}
		marks := doc.Find("table.payments tbody tr small.waiting").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
		if got := strings.Join(marks, "|"); got != "refund waiting for the processor (1.50 BRL held)|capture waiting for the processor" {
			t.Errorf("the rows say %q", got)
		}
		if href := doc.Find(".glance li.operations a").AttrOr("href", ""); href != "/admin?waiting=1" {
			t.Errorf("the overview's count of waiting operations links to %q", href)
		}
		res, body := b.asAdmin(t).do(t, "GET", "/admin/payments.csv?waiting=1", nil, "")
		if lines := strings.Count(strings.TrimSpace(string(body)), "\n"); res.StatusCode != http.StatusOK || lines != 2 {
			t.Errorf("payments.csv?waiting=1: %d, %d rows, want 2:\n%s", res.StatusCode, lines, body)
		}
		if res, _ := b.adminPage(t, "/admin?waiting=yes"); res.StatusCode != http.StatusBadRequest {
			t.Errorf("/admin?waiting=yes: %d, want 400", res.StatusCode)
		}
	})
}
