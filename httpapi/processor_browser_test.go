package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cmpay/cmpay/internal/browsertest"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// A support agent opens a payment whose processor calls are recorded and
// reads, in a real browser, the processor section: every call in a table
// row, the refund's status. A screenshot of the section is saved when
// CMPAY_SCREENSHOTS names a folder.
func TestAdminProcessorSectionInBrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 60*time.Second)
	b := setup(t, dbtest.SQLite(t))
	in := input("shop-7", "120", "BRL", "CREDIT_CARD")
	in["paymentMethodToken"] = "pm_card_visa"
	id := b.create(t, "order-2001", in).Payment.ID
	if r := b.gql(t, `mutation { refundPayment(paymentId: "`+id+`", amount: "20", idempotencyKey: "refund-1") { refund { id } } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("refund: %+v", r.Errors)
	}
	at := time.Now().UTC().Add(-time.Minute)
	code, found := "rate_limit", "captured"
	calls := []models.ProcessorCall{
		{OperationID: "op1", PaymentID: id, Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op1_create", Kind: "WRITE", Outcome: "UNKNOWN", At: at, DurationMs: 10000},
		{OperationID: "op1", PaymentID: id, Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op1_create", Kind: "WRITE", Outcome: "ERROR", Code: &code, At: at.Add(30 * time.Second), DurationMs: 12},
		{OperationID: "op1", PaymentID: id, Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op1_create", Kind: "READ", Outcome: "SUCCEEDED", RecordState: &found, At: at.Add(40 * time.Second), DurationMs: 35},
	}
	if err := b.db.Gorm.Create(&calls).Error; err != nil {
		t.Fatal(err)
	}

	browsertest.SignIn(t, ctx, b.srv.URL, "admin", adminPassword)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+"/admin/payments/"+id),
		chromedp.WaitVisible(chromedp.CSS("section.processor table.processor-calls")),
		chromedp.ScrollIntoView(chromedp.CSS("section.processor")),
	); err != nil {
		t.Fatalf("open the payment page: %v", err)
	}
	browsertest.Screenshot(t, ctx, "admin-payment-processor")
	rows := evalString(t, ctx, `[...document.querySelectorAll("section.processor table.processor-calls tbody tr")]`+
		`.map(r => r.innerText.replace(/\s+/g, " ").trim()).join("\n")`)
	lines := strings.Split(rows, "\n")
	// The three made up a minute ago, then the sandbox's own: the create's
	// and the refund's. The read says it is one, and what it found.
	if len(lines) != 5 || !strings.Contains(lines[0], "create Sent") || !strings.Contains(lines[0], "UNKNOWN") ||
		!strings.Contains(lines[0], "10.0 s") || !strings.Contains(lines[1], "rate_limit") ||
		!strings.Contains(lines[2], "create Read cmpay_op1_create read: captured") ||
		!strings.Contains(lines[3], "create Sent cmpay_op_") || !strings.Contains(lines[4], "refund Sent cmpay_op_") {
		t.Errorf("processor calls, oldest first:\n%s", rows)
	}
	if got := evalString(t, ctx, `document.querySelector("table.refunds .refund-status").innerText`); got != "SUCCEEDED" {
		t.Errorf("refund status %q", got)
	}
	if got := evalString(t, ctx, `document.querySelector("section.processor dl").innerText.replace(/\s+/g, " ")`); !strings.Contains(got, "sandbox") {
		t.Errorf("processor fields: %s", got)
	}
}
