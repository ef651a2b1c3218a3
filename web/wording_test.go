package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// The payment page's sentences have no space before their punctuation, and
// its times are to the second.
func TestPaymentPageWording(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_5", "order-5", 0, 0)
	refund := payments.Params{payments.FieldOperation: "REFUND_PAYMENT", payments.FieldAmount: "1", payments.FieldReason: "one item returned"}
	view := paymentView{Payment: p}
	for _, a := range []payments.Attempt{
		{Operation: payments.OpCreate, IdempotencyKey: "order-5", Outcome: payments.OutcomeCreated, At: created, Transport: "rest"},
		{Operation: payments.OpRefund, IdempotencyKey: "r-1", Outcome: payments.OutcomeApplied, At: created.Add(time.Minute), Transport: "rest", Params: refund},
		{Operation: payments.OpRefund, IdempotencyKey: "r-2", Outcome: payments.OutcomeRefused, At: created.Add(2 * time.Minute), Transport: "rest",
			Refusal: "AMOUNT_EXCEEDS_AVAILABLE", Params: refund},
		{Operation: payments.OpRefund, IdempotencyKey: "r-3", Outcome: payments.OutcomeRefused, At: created.Add(3 * time.Minute), Transport: "rest",
			Refusal: "PROCESSOR_REFUSED", Params: refund},
	} {
		view.Attempts = append(view.Attempts, attemptView{Attempt: a, Amount: paramAmount(a.Params, "BRL")})
	}
	doc := renderDoc(t, paymentPage(view))
	steps := doc.Find("table.timeline > tbody > tr")
	if got := squash(steps.Eq(1).Find(`td[data-label="What happened"]`).Text()); got != "Refunded 1.00 BRL (one item returned)." {
		t.Errorf("refund row %q", got)
	}
	if got := squash(steps.Eq(2).Find(`td[data-label="What happened"]`).Text()); strings.Contains(got, " ;") || strings.Contains(got, " .") ||
		!strings.Contains(got, "(asked for 1.00 BRL); nothing was done") {
		t.Errorf("refused row %q", got)
	}
	// The processor's refusal binds its key: the key is not unused.
	if got := squash(steps.Eq(3).Find(`td[data-label="What happened"]`).Text()); got !=
		"Refused by the processor (asked for 1.00 BRL): no money moved, and the key stays bound to this refusal." {
		t.Errorf("processor's refusal row %q", got)
	}
	toSecond := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	steps.Find("time").Each(func(_ int, s *goquery.Selection) {
		if !toSecond.MatchString(s.Text()) {
			t.Errorf("timeline time %q, want it to the second", s.Text())
		}
	})
	if doc.Find(`link[rel=icon][href="/favicon.ico"]`).Length() != 1 {
		t.Error("the page names no icon")
	}
}

// The chart's caption says what its bars count, and the busiest hour's
// number reads as a count, not a time of day.
func TestChartCaption(t *testing.T) {
	t.Parallel()
	st := payments.Stats{Hours: make([]payments.HourStats, 24)}
	st.Hours[5].Counts = payments.Counts{Created: 12, Replayed: 4, Rejected: 1}
	caption := squash(renderDoc(t, glance(st, newChart(st))).Find("figcaption").Text())
	for _, want := range []string{"Requests per hour (UTC)", "payments created", "requests replayed", "requests rejected", "The busiest hour had 17 requests."} {
		if !strings.Contains(caption, want) {
			t.Errorf("caption lacks %q: %s", want, caption)
		}
	}
	if strings.Contains(caption, "busiest hour 17") {
		t.Errorf("caption reads as a time: %s", caption)
	}
}

// Revoking a token and disabling an account take two steps in the page: the
// first only opens the question (a <details>), the form is inside it.
func TestDangerousButtonsAskFirst(t *testing.T) {
	t.Parallel()
	tokens := renderDoc(t, tokensPage(tokensView{Available: true, Tokens: []apitoken.Token{{ID: "tok_1", Name: "shop", CreatedAt: created}}}))
	accounts := renderDoc(t, staffPage(staffView{Me: "root", Accounts: []staff.Account{{Username: "ana", Role: staff.Viewer, CreatedAt: created}}}))
	authorized := samplePayment("pay_a", "order-a", 0, 0)
	authorized.Status, authorized.Captured.Minor = payments.StatusAuthorized, 0
	payment := renderDoc(t, paymentPage(paymentView{Payment: authorized, Actions: newActionForms(authorized)}))
	for name, doc := range map[string]*goquery.Document{"tokens": tokens, "staff": accounts, "payment": payment} {
		form := doc.Find(`form[action$="/revoke"], form[action$="/disable"], form[action$="/cancel"]`)
		if form.Length() != 1 || form.ParentsFiltered("details.confirm").Length() != 1 || form.Parent().Find("summary").Length() != 1 {
			t.Errorf("%s: the form is not behind a confirming <details>", name)
		}
		if !strings.HasPrefix(squash(form.Find("button").Text()), "Yes, ") {
			t.Errorf("%s: button %q", name, form.Find("button").Text())
		}
	}
	if got := tokens.Find(`td[data-label="Created"] time.when`).Text(); got != "2026-12-02 09:30:15" {
		t.Errorf("token created %q", got)
	}
}

// A delivery names the payment its event is about, with a link to it.
func TestDeliveriesNameTheirPayment(t *testing.T) {
	t.Parallel()
	d := webhooks.Delivery{WebhookDelivery: models.WebhookDelivery{ID: 3, EventID: 9, Status: "DELIVERED", EventPaymentID: "pay_42"},
		EventType: "PAYMENT_REFUNDED", URL: "https://shop.test/hooks"}
	doc := renderDoc(t, webhooksPage(webhooksView{Available: true, Deliveries: []webhooks.Delivery{d}, Now: created}))
	link := doc.Find(`table.deliveries td[data-label="Event"] a[href="/admin/payments/pay_42"]`)
	if link.Length() != 1 || !strings.Contains(squash(doc.Find(`td[data-label="Event"]`).Text()), "PAYMENT_REFUNDED payment pay_42") {
		t.Errorf("event cell %q", squash(doc.Find(`td[data-label="Event"]`).Text()))
	}
}

// Each Resend button names its delivery for a screen reader: every one
// read "Resend".
func TestResendButtonsNameTheirDelivery(t *testing.T) {
	t.Parallel()
	var ds []webhooks.Delivery
	for _, id := range []int64{3, 4} {
		ds = append(ds, webhooks.Delivery{WebhookDelivery: models.WebhookDelivery{ID: id, EventID: 9, Status: "FAILED"}, EventType: "PAYMENT_REFUNDED",
			URL: "https://shop.test/hooks"})
	}
	doc := renderDoc(t, webhooksPage(webhooksView{Available: true, Deliveries: ds, Now: created, CanResend: true}))
	labels := doc.Find(`form[action$="/resend"] button`).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("aria-label", "") })
	if strings.Join(labels, "|") != "Resend delivery 3|Resend delivery 4" {
		t.Errorf("Resend buttons' labels %q", labels)
	}
}

// After a staff member's capture, cancel or refund, the page says what it
// came to at the processor: done, sent and waiting for its answer, or
// refused or failed there; never "Refunded" for a refund not made.
func TestActionResultSaysWhatTheProcessorDid(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	applied := func(op payments.Operation, refundID string) []attemptView {
		return []attemptView{{Attempt: payments.Attempt{Operation: op, IdempotencyKey: "admin-k", Outcome: payments.OutcomeApplied,
			At: created, RefundID: refundID, Transport: "admin", Actor: "ana"}}}
	}
	authorized := payments.Payment{ID: "pay_1", Amount: brl(1050), Captured: brl(0), Refunded: brl(0), Reserved: brl(0),
		Status: payments.StatusAuthorized}
	captured := authorized
	captured.Status, captured.Captured = payments.StatusCaptured, brl(1050)
	pending := func(op payments.Operation) payments.Payment { p := authorized; p.PendingOperation = op; return p }
	canceled := authorized
	canceled.Status = payments.StatusCanceled
	refund := func(status payments.RefundStatus, code string) []payments.Refund {
		return []payments.Refund{{ID: "ref_1", PaymentID: "pay_1", Amount: brl(400), Status: status, FailureCode: code}}
	}
	returned := refund(payments.RefundFailed, "expired_or_canceled_card")
	returned[0].ReturnedAt = created.Add(time.Hour)
	for _, c := range []struct {
		name string
		v    paymentView
		want string
	}{
		{"capture done", paymentView{Payment: captured, Attempts: applied(payments.OpCapture, "")}, "Captured 10.50 BRL"},
		{"capture waiting", paymentView{Payment: pending(payments.OpCapture), Attempts: applied(payments.OpCapture, "")},
			"Capture of 10.50 BRL sent; the processor has not answered yet"},
		{"capture refused", paymentView{Payment: authorized, Attempts: applied(payments.OpCapture, "")}, "Capture of 10.50 BRL refused by the processor"},
		{"cancel done", paymentView{Payment: canceled, Attempts: applied(payments.OpCancel, "")}, "Canceled the authorization"},
		{"cancel waiting", paymentView{Payment: pending(payments.OpCancel), Attempts: applied(payments.OpCancel, "")},
			"Cancel sent; the processor has not answered yet"},
		{"refund done", paymentView{Payment: captured, Refunds: refund(payments.RefundSucceeded, ""), Attempts: applied(payments.OpRefund, "ref_1")},
			"Refunded 4.00 BRL"},
		{"refund waiting", paymentView{Payment: captured, Refunds: refund(payments.RefundProcessing, ""), Attempts: applied(payments.OpRefund, "ref_1")},
			"Refund of 4.00 BRL sent; the processor has not answered yet"},
		{"refund failed", paymentView{Payment: captured, Refunds: refund(payments.RefundFailed, "expired_or_canceled_card"),
			Attempts: applied(payments.OpRefund, "ref_1")}, "Refund of 4.00 BRL failed at the processor (expired_or_canceled_card)"},
		{"refund returned", paymentView{Payment: captured, Refunds: returned, Attempts: applied(payments.OpRefund, "ref_1")},
			"Refunded 4.00 BRL, then returned by the payer's bank (expired_or_canceled_card)"},
	} {
		if res := resultOf(c.v, "admin-k"); res == nil || res.What != c.want {
			t.Errorf("%s: %+v, want %q", c.name, res, c.want)
		}
	}
}

// The timeline's line for the create request says what the processor made
// of it: support staff read it literally, and a declined card or a payment
// still waiting for the processor was said to be captured.
func TestPaymentPageCreatedLine(t *testing.T) {
	t.Parallel()
	card := func(st payments.Status, decline string) payments.Payment {
		p := samplePayment("pay_6", "order-6", 0, 0)
		p.Method, p.Status, p.DeclineCode = payments.MethodCreditCard, st, decline
		return p
	}
	pix := func(st payments.Status) payments.Payment {
		p := samplePayment("pay_9", "order-9", 0, 0)
		p.Status, p.Captured = st, payments.Money{Currency: "BRL"}
		return p
	}
	toPay := func(st payments.Status) payments.Payment {
		p := samplePayment("pay_10", "order-10", 0, 0)
		p.Status, p.NextAction = st, &payments.NextAction{Type: payments.NextActionPixCode, PixCode: "000201", ExpiresAt: created}
		return p
	}
	boleto := func(st payments.Status, na *payments.NextAction) payments.Payment {
		p := samplePayment("pay_11", "order-11", 0, 0)
		p.Method, p.Status, p.NextAction = payments.MethodBoleto, st, na
		return p
	}
	captured := payments.Params{payments.FieldCapture: "true"}
	authorize := payments.Params{payments.FieldCapture: "false"}
	// The create's first call went unanswered: the client got PROCESSING.
	late := []payments.ProcessorCall{{Operation: payments.OpCreate, Outcome: payments.CallUnknown, Code: "timeout", At: created},
		{Operation: payments.OpCreate, Outcome: payments.CallSucceeded, At: created.Add(time.Minute)}}
	for _, c := range []struct {
		p      payments.Payment
		params payments.Params
		want   string
		calls  []payments.ProcessorCall
	}{
		{card(payments.StatusDeclined, "card_declined"), captured, "Created this payment; the processor declined it (card_declined): no money moved.", nil},
		{card(payments.StatusDeclined, ""), authorize, "Created this payment; the processor declined it: no money moved.", nil},
		{card(payments.StatusProcessing, ""), captured, "Created this payment; answered PROCESSING: waiting for the processor's answer.", late[:1]},
		{card(payments.StatusCaptured, ""), captured, "Created this payment; answered PROCESSING; captured later.", late},
		{card(payments.StatusRefunded, ""), captured, "Created this payment; answered PROCESSING; captured later.", late},
		{card(payments.StatusCanceled, ""), authorize, "Created this payment; answered PROCESSING; authorized later.", late},
		{card(payments.StatusDeclined, "card_declined"), captured, "Created this payment; answered PROCESSING; the processor declined it later (card_declined): no money moved.", late},
		{card(payments.StatusCaptured, ""), captured, "Created this payment, captured.", late[1:]},
		// A call stamped before the payment was stored is not its create's.
		{card(payments.StatusCaptured, ""), captured, "Created this payment, captured.",
			[]payments.ProcessorCall{{Operation: payments.OpCreate, Outcome: payments.CallUnknown, At: created.Add(-time.Minute)}, late[1]}},
		{card(payments.StatusAuthorized, ""), authorize, "Created this payment, authorized only.", nil},
		{card(payments.StatusCanceled, ""), authorize, "Created this payment, authorized only.", nil},
		{card(payments.StatusRefunded, ""), captured, "Created this payment, captured.", nil},
		// The synchronous sandbox (SANDBOX_METHODS=instant) pays a Pix on
		// create: it was said to be left for the payer to pay.
		{samplePayment("pay_7", "order-7", 0, 0), captured, "Created this payment, paid by Pix at once.", nil},
		{boleto(payments.StatusRefunded, nil), captured, "Created this payment, paid by boleto at once.", nil},
		{pix(payments.StatusCaptured), captured, "Created this payment; answered PROCESSING; captured later.", late},
		// One left to its payer has a next action, kept once paid.
		{toPay(payments.StatusPending), captured, "Created this payment for the payer to pay by Pix.", nil},
		{toPay(payments.StatusCaptured), captured, "Created this payment for the payer to pay by Pix.", nil},
		{toPay(payments.StatusRefunded), captured, "Created this payment for the payer to pay by Pix.", nil},
		{toPay(payments.StatusCaptured), captured, "Created this payment; answered PROCESSING; created later for the payer to pay by Pix.", late},
		{pix(payments.StatusExpired), captured, "Created this payment for the payer to pay by Pix.", nil},
		{boleto(payments.StatusPending, &payments.NextAction{Type: payments.NextActionBoleto, BoletoLine: "23790", ExpiresAt: created}),
			captured, "Created this payment for the payer to pay by boleto.", nil},
		// A Pix the synchronous sandbox authorized at once was said to be
		// left for the payer to pay.
		{pix(payments.StatusAuthorized), authorize, "Created this payment, authorized only.", nil},
		{pix(payments.StatusAuthorized), authorize, "Created this payment; answered PROCESSING; authorized later.", late},
	} {
		at := payments.Attempt{Operation: payments.OpCreate, IdempotencyKey: c.p.IdempotencyKey, Outcome: payments.OutcomeCreated,
			At: created, Transport: "rest", Params: c.params}
		doc := renderDoc(t, paymentPage(paymentView{Payment: c.p, Attempts: []attemptView{{Attempt: at}}, ProcessorCalls: c.calls}))
		got := squash(doc.Find(`table.timeline > tbody > tr td[data-label="What happened"]`).Text())
		if got != c.want {
			t.Errorf("%s payment's create line (%d calls) %q, want %q", c.p.Status, len(c.calls), got, c.want)
		}
	}
}

// A Pix's create line on the real payment page says what the sandbox did
// with it in each of its modes: paid at once (instant, the default) or
// left to the payer, then paid (async). The instant one read as left to
// the payer.
func TestPixCreatedLineBySandboxMode(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		st, session := signedInAdmin(t, db)
		for _, c := range []struct {
			mode processor.SandboxMethods
			pay  bool
			want string
		}{
			{processor.SandboxInstant, false, "Created this payment, paid by Pix at once."},
			{processor.SandboxAsync, false, "Created this payment for the payer to pay by Pix."},
			{processor.SandboxAsync, true, "Created this payment for the payer to pay by Pix."},
		} {
			cfg := processor.DefaultConfig()
			cfg.SandboxMethods = c.mode
			svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("pix-%s-%t", c.mode, c.pay)
			res, err := svc.Create(t.Context(), payments.CreateRequest{ClientID: "shop-1", Amount: "10.50", Currency: "BRL",
				Method: payments.MethodPix, IdempotencyKey: key, Origin: payments.Origin{Transport: "rest"}})
			if err != nil {
				t.Fatal(err)
			}
			p := res.Payment
			if c.pay {
				if p, err = svc.PaySandbox(t.Context(), p.ID); err != nil {
					t.Fatal(err)
				}
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/admin/payments/"+p.ID, nil)
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
			Admin(AdminDeps{Payments: svc, Staff: st}).ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", key, rec.Code, rec.Body)
			}
			doc, err := goquery.NewDocumentFromReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := squash(doc.Find(`table.timeline > tbody > tr td[data-label="What happened"]`).First().Text())
			if got != c.want {
				t.Errorf("%s (%s): create line %q, want %q", key, p.Status, got, c.want)
			}
		}
	})
}

// An applied capture, cancel or refund reads as where it stands at the
// processor: a capture of 150.00 BRL whose call timed out read "Captured
// 150.00 BRL." while nothing was captured.
func TestPaymentPageAppliedLine(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	authorized := samplePayment("pay_8", "order-8", 0, 0)
	authorized.Method, authorized.Status, authorized.Captured, authorized.Amount = payments.MethodCreditCard, payments.StatusAuthorized, brl(0), brl(20000)
	capturing, canceling := authorized, authorized
	capturing.PendingOperation, canceling.PendingOperation = payments.OpCapture, payments.OpCancel
	captured := authorized
	captured.Status, captured.Captured = payments.StatusCaptured, brl(15000)
	canceled := authorized
	canceled.Status = payments.StatusCanceled
	refund := func(st payments.RefundStatus) []payments.Refund {
		return []payments.Refund{{ID: "ref_1", Amount: brl(2000), Status: st}}
	}
	for _, c := range []struct {
		name    string
		p       payments.Payment
		op      payments.Operation
		refunds []payments.Refund
		want    string
	}{
		{"pending capture", capturing, payments.OpCapture, nil, "Capture of 150.00 BRL sent; the processor has not answered yet."},
		{"capture", captured, payments.OpCapture, nil, "Captured 150.00 BRL."},
		{"pending cancel", canceling, payments.OpCancel, nil, "Cancel sent; the processor has not answered yet."},
		{"cancel", canceled, payments.OpCancel, nil, "Canceled the authorization."},
		{"pending refund", captured, payments.OpRefund, refund(payments.RefundProcessing), "Refund of 20.00 BRL (one item) sent; the processor has not answered yet."},
		{"refund", captured, payments.OpRefund, refund(payments.RefundSucceeded), "Refunded 20.00 BRL (one item)."},
		{"failed refund", captured, payments.OpRefund, []payments.Refund{{ID: "ref_1", Amount: brl(2000), Status: payments.RefundFailed, FailureCode: "expired_card"}},
			"Refund of 20.00 BRL (one item) failed at the processor (expired_card)."},
	} {
		params := payments.Params{payments.FieldReason: "one item"}
		amount := ""
		if c.op != payments.OpCancel {
			params[payments.FieldAmount] = map[payments.Operation]string{payments.OpCapture: "150", payments.OpRefund: "20"}[c.op]
			amount = paramAmount(params, "BRL")
		}
		if c.op != payments.OpRefund {
			delete(params, payments.FieldReason)
		}
		at := attemptView{Attempt: payments.Attempt{Operation: c.op, IdempotencyKey: "k-1", Outcome: payments.OutcomeApplied,
			At: created, Transport: "rest", Params: params, RefundID: "ref_1"}, Amount: amount}
		doc := renderDoc(t, paymentPage(paymentView{Payment: c.p, Refunds: c.refunds, Attempts: []attemptView{at}}))
		got := squash(doc.Find(`table.timeline > tbody > tr td[data-label="What happened"]`).Text())
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// With no action to offer, the page says what waits instead of blaming the
// status: a pending capture read "Nothing can be done to a payment that is
// AUTHORIZED."
func TestNoActionSaysWhatWaits(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	capturing := samplePayment("pay_9", "order-9", 0, 0)
	capturing.Method, capturing.Status, capturing.Captured, capturing.Amount = payments.MethodCreditCard, payments.StatusAuthorized, brl(0), brl(20000)
	capturing.PendingOperation = payments.OpCapture
	capture := attemptView{Attempt: payments.Attempt{Operation: payments.OpCapture, Outcome: payments.OutcomeApplied, At: created}, Amount: "150.00 BRL"}
	reserved := samplePayment("pay_10", "order-10", 0, 0)
	reserved.Reserved = reserved.Captured
	refunded := samplePayment("pay_11", "order-11", 0, 0)
	refunded.Status, refunded.Refunded = payments.StatusRefunded, refunded.Captured
	for _, c := range []struct {
		v    paymentView
		want string
	}{
		{paymentView{Payment: capturing, Attempts: []attemptView{capture}}, "A capture of 150.00 BRL waits for the processor; CMPay resolves it, nothing to do."},
		{paymentView{Payment: reserved}, "Refunds of 10.50 BRL wait for the processor and hold all that is left to refund; CMPay resolves them, nothing to do."},
		{paymentView{Payment: refunded}, "Nothing can be done to a payment that is REFUNDED."},
	} {
		c.v.Actions = newActionForms(c.v.Payment)
		if got := squash(renderDoc(t, paymentPage(c.v)).Find(".actions-panel p.none").Text()); got != c.want {
			t.Errorf("%s: %q, want %q", c.v.Payment.ID, got, c.want)
		}
	}
}

// An amount typed in an admin form is digits and a point: "1e1" refunded
// 10.00, and "1,50" got a message that did not say how to write it.
func TestTypedAmounts(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"": "", "10": "", "10.5": "", "0.01": "",
		"1,50": "use a point for the decimals: 1.50",
		"1e1":  "type the amount as digits with an optional point, like 12.50",
		"+1":   "type the amount as digits with an optional point, like 12.50",
		"1E2":  "type the amount as digits with an optional point, like 12.50",
		"1.":   "", ".5": "",
		"ten": "", // the engine's message says it is not a number
		"-1":  "",
	} {
		if got := typedAmountProblem(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

// A declined payment's retried create says no second payment was made; it
// said "nothing was charged again" of a payment never charged.
func TestReplayedCreateWordedByStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status   payments.Status
		captured int64
		want     string
	}{
		{payments.StatusDeclined, 0, "no second payment was made"},
		{payments.StatusAuthorized, 0, "no second payment was made"},
		{payments.StatusCaptured, 1050, "nothing was charged again"},
	} {
		p := samplePayment("pay_d", "order-d", 1, 0)
		p.Method, p.Status, p.Captured.Minor = payments.MethodCreditCard, c.status, c.captured
		view := paymentView{Payment: p}
		for _, o := range []payments.Outcome{payments.OutcomeCreated, payments.OutcomeReplayed} {
			view.Attempts = append(view.Attempts, attemptView{Attempt: payments.Attempt{Operation: payments.OpCreate,
				IdempotencyKey: "order-d", Outcome: o, At: created, Transport: "rest"}})
		}
		doc := renderDoc(t, paymentPage(view))
		if got := squash(doc.Find(".answer").Text()); !strings.Contains(got, "each retry got the first result back and "+c.want+".") {
			t.Errorf("%s: %q, want it to say %q", c.status, got, c.want)
		}
		if title, _ := doc.Find(".key-uses .badge.replayed").Attr("title"); !strings.HasSuffix(title, c.want) {
			t.Errorf("%s: badge title %q", c.status, title)
		}
	}
}

// signedInAdmin is a staff store on db with its first admin, and that
// admin's session token.
func signedInAdmin(t *testing.T, db dbtest.DB) (*staff.Store, string) {
	t.Helper()
	st := staff.New(db.Gorm, staff.Config{Hash: staff.HashParams{Memory: 64, Time: 1, Threads: 1}})
	t.Cleanup(st.Close)
	if _, err := st.Bootstrap(t.Context(), "admin", "admin-password"); err != nil {
		t.Fatal(err)
	}
	session, _, err := st.SignIn(t.Context(), staff.SignInRequest{Username: "admin", Password: "admin-password", Address: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return st, session
}
