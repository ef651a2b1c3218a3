package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

// The real payment page of sandbox payments captured, canceled and
// refunded: one call row for the create and one per applied change, oldest
// first, each sent, SUCCEEDED, with no code, 0 ms, under its operation's
// key ("cmpay_" and the operation its idempotency key names), at the time
// of the change's APPLIED attempt to the microsecond.
func TestPaymentPageSandboxChangeCalls(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, session := signedInAdmin(t, db)
		svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(processor.DefaultConfig())})
		if err != nil {
			t.Fatal(err)
		}
		canceled, refunded := pageSandboxChanges(t, svc)
		admin := Admin(AdminDeps{Payments: svc, Staff: st})
		for id, n := range map[string]int{canceled: 2, refunded: 4} {
			want := wantPageCalls(t, db, svc, id)
			if len(want) != n {
				t.Fatalf("%s: %d calls expected from its attempts, want %d", id, len(want), n)
			}
			if got := pageCallRows(t, admin, session, id); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s's call rows\n got %q\nwant %q", id, got, want)
			}
		}
	})
}

// pageSandboxChanges makes, through svc, one payment authorized and then
// canceled, and one authorized, captured in part and refunded twice, and
// answers their ids.
func pageSandboxChanges(t *testing.T, svc *payments.Service) (canceled, refunded string) {
	t.Helper()
	ctx, origin := t.Context(), payments.Origin{Transport: "rest"}
	authorized := func(key string) string {
		no := false
		res, err := svc.Create(ctx, payments.CreateRequest{ClientID: "shop-1", Amount: "30.00", Currency: "BRL",
			Method: payments.MethodCreditCard, Capture: &no, IdempotencyKey: key, Origin: origin})
		if err != nil {
			t.Fatal(err)
		}
		return res.Payment.ID
	}
	check := func(_ payments.ChangeResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	canceled, refunded = authorized("page-cancel"), authorized("page-refund")
	check(svc.Cancel(ctx, payments.CancelRequest{PaymentID: canceled, IdempotencyKey: "p-cancel", Origin: origin}))
	twentyFive, five := "25.00", "5.00"
	check(svc.Capture(ctx, payments.CaptureRequest{PaymentID: refunded, Amount: &twentyFive, IdempotencyKey: "p-capture", Origin: origin}))
	check(svc.Refund(ctx, payments.RefundRequest{PaymentID: refunded, Amount: &five, IdempotencyKey: "p-refund-1", Origin: origin}))
	check(svc.Refund(ctx, payments.RefundRequest{PaymentID: refunded, IdempotencyKey: "p-refund-2", Origin: origin}))
	return canceled, refunded
}

// wantPageCalls is the call rows payment id's page must show, read from
// the payment and its APPLIED attempts: its create's, then each change's,
// as pageCallRows gives them.
func wantPageCalls(t *testing.T, db dbtest.DB, svc *payments.Service, id string) []string {
	t.Helper()
	p, err := svc.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{precise(p.CreatedAt) + "|" + p.CreatedAt.UTC().Format(callTime) +
		"|create|Sent|cmpay_op_" + strings.TrimPrefix(id, "pay_") + "|SUCCEEDED||0 ms"}
	attempts, err := svc.Attempts(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attempts {
		if a.Outcome != payments.OutcomeApplied || a.Operation == payments.OpCreate {
			continue
		}
		var k models.IdempotencyKey
		if err := db.Gorm.Where("client_id = ? AND idempotency_key = ?", "shop-1", a.IdempotencyKey).Take(&k).Error; err != nil ||
			k.ProcessorOperationID == nil {
			t.Fatalf("key %s: %v", a.IdempotencyKey, err)
		}
		want = append(want, precise(a.At)+"|"+a.At.UTC().Format(callTime)+"|"+operationName(a.Operation)+
			"|Sent|cmpay_"+*k.ProcessorOperationID+"|SUCCEEDED||0 ms")
	}
	return want
}

// pageCallRows is the call rows of payment id's admin page, each its cells
// joined by "|", its time element's datetime second.
func pageCallRows(t *testing.T, admin http.Handler, session, id string) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/admin/payments/"+id, nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
	admin.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", id, rec.Code, rec.Body)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	doc.Find("section.processor table.processor-calls tbody tr").Each(func(_ int, row *goquery.Selection) {
		at, _ := row.Find("time").Attr("datetime")
		cells := row.Find("td").Map(func(_ int, s *goquery.Selection) string { return strings.TrimSpace(s.Text()) })
		got = append(got, cells[0]+"|"+at+"|"+strings.Join(cells[1:], "|"))
	})
	return got
}

// callTime is how a call row's time element gives its time.
const callTime = "2006-01-02T15:04:05.000000Z07:00"
