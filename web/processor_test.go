package web

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/payments"
)

// The payment page's processor section: the processor and reference, the
// pending capture and the refund in flight in plain words, a failed
// refund's code, and one row per processor call with its key, outcome,
// code, time and duration.
func TestPaymentPageProcessorSection(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_7", "order-7", 0, 0)
	p.Processor, p.ProcessorReference = "stripe", "pi_3Qx"
	p.Status, p.Captured, p.CapturedAt = payments.StatusAuthorized, payments.Money{Currency: "BRL"}, time.Time{}
	p.PendingOperation = payments.OpCapture
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	view := paymentView{
		Payment: p,
		Refunds: []payments.Refund{
			{ID: "ref_1", Amount: brl(300), IdempotencyKey: "r1", CreatedAt: created, Status: payments.RefundProcessing},
			{ID: "ref_2", Amount: brl(200), IdempotencyKey: "r2", CreatedAt: created, Status: payments.RefundFailed, FailureCode: "charge_disputed"},
			{ID: "ref_3", Amount: brl(100), IdempotencyKey: "r3", CreatedAt: created}, // stored before processors: succeeded
		},
		ProcessorCalls: []payments.ProcessorCall{
			{Operation: payments.OpCreate, ProcessorKey: "cmpay_op1", Outcome: payments.CallSucceeded, At: created, Duration: 42 * time.Millisecond},
			{Operation: payments.OpCapture, ProcessorKey: "cmpay_op2", Outcome: payments.CallUnknown, At: created.Add(time.Minute), Duration: 10 * time.Second},
			{Operation: payments.OpCapture, ProcessorKey: "cmpay_op2", Outcome: payments.CallError, Code: "rate_limit", At: created.Add(2 * time.Minute), Duration: 7 * time.Millisecond},
		},
	}
	doc := renderDoc(t, paymentPage(view))
	section := doc.Find("section.processor")
	if section.Length() != 1 {
		t.Fatal("no processor section")
	}
	text := strings.Join(strings.Fields(section.Text()), " ")
	for _, want := range []string{
		"stripe", "pi_3Qx",
		"Capture sent to the processor; its answer is not known yet. CMPay will resolve it by itself.",
		"Refund of 3.00 BRL sent to the processor; its answer is not known yet.",
		"failed the refund of 2.00 BRL (charge_disputed)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("processor section lacks %q: %s", want, text)
		}
	}
	rows := section.Find("table.processor-calls tbody tr")
	if rows.Length() != 3 {
		t.Fatalf("%d call rows, want 3", rows.Length())
	}
	cells := func(i int) string {
		return strings.Join(rows.Eq(i).Find("td").Map(func(_ int, s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }), "|")
	}
	for i, want := range []string{
		"2026-12-02 09:30:15|create|Sent|cmpay_op1|SUCCEEDED||42 ms",
		"2026-12-02 09:31:15|capture|Sent|cmpay_op2|UNKNOWN||10.0 s",
		"2026-12-02 09:32:15|capture|Sent|cmpay_op2|ERROR|rate_limit|7 ms",
	} {
		if got := cells(i); got != want {
			t.Errorf("call row %d: %q, want %q", i, got, want)
		}
	}
	statuses := doc.Find("table.refunds .refund-status").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	if strings.Join(statuses, ",") != "PROCESSING,FAILED,SUCCEEDED" {
		t.Errorf("refund statuses %v", statuses)
	}
}

// A read of the processor's record says it is a read, and what it found,
// not "SUCCEEDED": an expired Pix showed "create SUCCEEDED" twice and a
// refund still pending "refund SUCCEEDED" three times, under "Key sent to
// the processor", and support read two creates and three refunds.
func TestPaymentPageCallsSayReadFromSent(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_9", "order-9", 0, 0)
	p.Processor, p.Status, p.Captured = "stripe", payments.StatusExpired, payments.Money{Currency: "BRL"}
	call := func(op payments.Operation, kind payments.CallKind, o payments.CallOutcome, code, state string, at int) payments.ProcessorCall {
		return payments.ProcessorCall{Operation: op, Kind: kind, ProcessorKey: "cmpay_op_" + string(op[0]), Outcome: o, Code: code,
			RecordState: state, At: created.Add(time.Duration(at) * time.Minute), Duration: 5 * time.Millisecond}
	}
	calls := []payments.ProcessorCall{
		call(payments.OpCreate, payments.CallWrite, payments.CallSucceeded, "", "pending", 0),
		call(payments.OpCreate, payments.CallRead, payments.CallSucceeded, "", "expired", 1),
		call(payments.OpRefund, payments.CallWrite, payments.CallSucceeded, "", "pending", 2),
		call(payments.OpRefund, payments.CallRead, payments.CallSucceeded, "", "pending", 3),
		call(payments.OpRefund, payments.CallRead, payments.CallSucceeded, "", "succeeded", 4),
		call(payments.OpRefund, payments.CallRead, payments.CallDeclined, "charge_disputed", "failed", 5),
		call(payments.OpCapture, payments.CallRead, payments.CallUnknown, "", "", 6),
		call(payments.OpCreate, payments.CallRead, payments.CallError, "none_found", "", 7),
		call(payments.OpCreate, payments.CallRead, payments.CallSucceeded, "", "", 8), // stored before states were kept
	}
	doc := renderDoc(t, paymentPage(paymentView{Payment: p, ProcessorCalls: calls}))
	table := doc.Find("section.processor table.processor-calls")
	heads := squash(table.Find("thead th").Text())
	if !strings.Contains(heads, "Sent / read") || strings.Contains(heads, "Key sent") {
		t.Errorf("the calls' headers %q: want a Sent / read column, no \"Key sent\"", heads)
	}
	want := []string{
		"create Sent SUCCEEDED: still pending",
		"create Read read: expired",
		"refund Sent SUCCEEDED: still pending",
		"refund Read read: still pending",
		"refund Read read: succeeded",
		"refund Read read: failed",
		"capture Read read: no answer",
		"create Read read: not found",
		"create Read read: answered",
	}
	rows := table.Find("tbody tr")
	if rows.Length() != len(want) {
		t.Fatalf("%d call rows, want %d", rows.Length(), len(want))
	}
	for i, w := range want {
		row := rows.Eq(i)
		got := squash(row.Find(`td[data-label="Operation"]`).Text() + " " + row.Find(`td[data-label="Sent / read"]`).Text() +
			" " + row.Find(`td[data-label="Result"]`).Text())
		if got != w {
			t.Errorf("call row %d: %q, want %q", i, got, w)
		}
		if isRead := calls[i].Kind == payments.CallRead; isRead != row.Find(".badge.read").Is("span") {
			t.Errorf("call row %d: a read %v, but its badge is %q", i, isRead, row.Find(".badge").AttrOr("class", ""))
		}
	}
}

// A declined payment says so, with its code; one with no calls says that.
func TestPaymentPageDeclined(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_8", "order-8", 0, 0)
	p.Status, p.DeclineCode = payments.StatusDeclined, "insufficient_funds"
	doc := renderDoc(t, paymentPage(paymentView{Payment: p}))
	text := strings.Join(strings.Fields(doc.Find("section.processor").Text()), " ")
	for _, want := range []string{"declined this payment (insufficient_funds); no money moved",
		"sandbox", "none yet", "No call to the processor is recorded"} {
		if !strings.Contains(text, want) {
			t.Errorf("declined payment's section lacks %q: %s", want, text)
		}
	}
	if got := doc.Find("section.processor .decline-code").Text(); got != "insufficient_funds" {
		t.Errorf("decline code %q", got)
	}
	if got := doc.Find(".badge.status").First().AttrOr("class", ""); !strings.Contains(got, "declined") {
		t.Errorf("DECLINED badge class %q", got)
	}
}

// The list filters by every status a processor adds, PROCESSING first.
func TestListFilterOffersProcessorStatuses(t *testing.T) {
	t.Parallel()
	doc := renderDoc(t, listPage(listView{Form: filterForm{Status: "PROCESSING"},
		Chart: newChart(payments.Stats{Hours: make([]payments.HourStats, 24)})}))
	for _, st := range []string{"PROCESSING", "DECLINED", "PENDING", "EXPIRED"} {
		if doc.Find(`select[name=status] option[value=`+st+`]`).Length() != 1 {
			t.Errorf("the status filter lacks %s", st)
		}
	}
	if got := doc.Find(`select[name=status] option[selected]`).AttrOr("value", ""); got != "PROCESSING" {
		t.Errorf("selected status %q, want PROCESSING", got)
	}
}

// While a capture or cancel waits for the processor, the page offers no
// second one; an authorization with nothing pending offers both.
func TestNoActionWhileProcessorPending(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_6", "order-6", 0, 0)
	p.Status = payments.StatusAuthorized
	if f := newActionForms(p); f.Capture == nil || f.Cancel == nil {
		t.Fatalf("an authorization: %+v, want capture and cancel", f)
	}
	p.PendingOperation = payments.OpCancel
	if f := newActionForms(p); f.any() {
		t.Errorf("a pending cancel: %+v, want no action", f)
	}
}

// A card payment whose refund the payer's bank returned after it succeeded
// says so in plain words, with when and the processor's code, beside a
// refund that failed at once; its processor section lists the events the
// processor sent, as a Pix's paid-later section does.
func TestPaymentPageShowsARefundReturnedAfterSucceeding(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	p := samplePayment("pay_9", "order-9", 0, 0)
	p.Method, p.Processor, p.ProcessorReference = payments.MethodCreditCard, "stripe", "pi_9"
	p.Status, p.Refunded = payments.StatusPartiallyRefunded, brl(400)
	returned := created.Add(48 * time.Hour)
	applied := returned.Add(time.Second)
	doc := renderDoc(t, paymentPage(paymentView{
		Payment: p,
		Refunds: []payments.Refund{
			{ID: "ref_1", Amount: brl(400), IdempotencyKey: "r1", CreatedAt: created, Status: payments.RefundSucceeded},
			{ID: "ref_2", Amount: brl(650), IdempotencyKey: "r2", CreatedAt: created, Status: payments.RefundFailed,
				FailureCode: "expired_or_canceled_card", ReturnedAt: returned},
			{ID: "ref_3", Amount: brl(100), IdempotencyKey: "r3", CreatedAt: created, Status: payments.RefundFailed,
				FailureCode: "charge_disputed"},
		},
		ProcessorEvents: []intake.Received{
			{ID: "evt_1", Type: "refund.updated", Created: returned, ReceivedAt: returned, AppliedAt: &applied},
			{ID: "evt_2", Type: "charge.refund.updated", Created: returned, ReceivedAt: returned, AppliedAt: &applied},
		},
	}))
	section := doc.Find("section.processor")
	text := strings.Join(strings.Fields(section.Text()), " ")
	for _, want := range []string{
		"The refund of 6.50 BRL succeeded, then came back: the processor failed it on 2026-12-04 09:30:15 UTC " +
			"(expired_or_canceled_card), the payer's bank having returned it. The payer did not get it back; " +
			"it no longer counts as refunded and can be refunded again.",
		"The processor failed the refund of 1.00 BRL (charge_disputed); no money went back",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("processor section lacks %q: %s", want, text)
		}
	}
	if strings.Contains(text, "failed the refund of 6.50") {
		t.Errorf("the returned refund is also told as failed at once: %s", text)
	}
	rows := section.Find("table[aria-labelledby=processor-events] tbody tr")
	if rows.Length() != 2 || !strings.Contains(rows.Eq(1).Text(), "charge.refund.updated") {
		t.Errorf("processor events: %q", rows.Text())
	}
	if doc.Find("#paid-later").Length() != 0 {
		t.Error("a card payment shows the paid-later section")
	}
}

// A payment whose work waits because the processor refuses CMPay's
// credentials says so, and what ends the wait; one whose last call was
// any other error says CMPay resolves it alone. A create the processor
// never made says that, not "declined".
func TestPaymentPageSaysWhatTheProcessorWaitsFor(t *testing.T) {
	t.Parallel()
	section := func(p payments.Payment, calls ...payments.ProcessorCall) string {
		doc := renderDoc(t, paymentPage(paymentView{Payment: p, ProcessorCalls: calls}))
		return strings.Join(strings.Fields(doc.Find("section.processor").Text()), " ")
	}
	call := func(code string, at time.Duration) payments.ProcessorCall {
		return payments.ProcessorCall{Operation: payments.OpCreate, ProcessorKey: "cmpay_op1", Outcome: payments.CallError,
			Code: code, At: created.Add(at)}
	}
	const credentials = "refused CMPay's credentials on its last call (authentication): nothing can be resolved " +
		"until CMPay's API key for it (STRIPE_API_KEY) is fixed"
	p := samplePayment("pay_10", "order-10", 0, 0)
	p.Processor, p.Status = "stripe", payments.StatusProcessing
	if text := section(p, call("timeout", 0), call(payments.CodeCredentialsRefused, time.Minute)); !strings.Contains(text, credentials) ||
		!strings.Contains(text, "Payment sent to the processor; its answer is not known yet.") {
		t.Errorf("credentials refused on the last call: %s", text)
	}
	if text := section(p, call(payments.CodeCredentialsRefused, 0), call("rate_limit", time.Minute)); strings.Contains(text, "credentials") {
		t.Errorf("credentials refused before, not on the last call: %s", text)
	}
	p.Status, p.DeclineCode = payments.StatusDeclined, payments.DeclineNotCreated
	if text := section(p, call(payments.CodeCredentialsRefused, 0)); strings.Contains(text, "credentials") ||
		!strings.Contains(text, "The processor never made this payment") || !strings.Contains(text, "no money moved") {
		t.Errorf("a create never made: %s", text)
	}
}

// A refund the processor answered with its record while not settled
// (Stripe's "pending") reads as accepted, not as unanswered; the refunds
// table dates each refund by its request.
func TestAcceptedRefundIsNotUnanswered(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	p := samplePayment("pay_r", "order-r", 0, 0)
	refund := payments.Refund{ID: "ref_1", Amount: brl(2000), IdempotencyKey: "r1", CreatedAt: created, Status: payments.RefundProcessing}
	call := func(o payments.CallOutcome) payments.ProcessorCall {
		return payments.ProcessorCall{Operation: payments.OpRefund, ProcessorKey: "cmpay_op2", Outcome: o, At: created.Add(time.Second)}
	}
	for _, c := range []struct {
		calls   []payments.ProcessorCall
		refunds []payments.Refund
		want    string
	}{
		{[]payments.ProcessorCall{call(payments.CallUnknown), call(payments.CallSucceeded)}, []payments.Refund{refund},
			"Refund of 20.00 BRL accepted by the processor; not settled yet. CMPay learns the outcome by itself."},
		{[]payments.ProcessorCall{call(payments.CallSucceeded), call(payments.CallUnknown)}, []payments.Refund{refund},
			"Refund of 20.00 BRL sent to the processor; its answer is not known yet. CMPay will resolve it by itself."},
		{[]payments.ProcessorCall{call(payments.CallSucceeded)}, []payments.Refund{refund, {ID: "ref_2", Amount: brl(100), CreatedAt: created, Status: payments.RefundProcessing}},
			"Refund of 20.00 BRL sent to the processor; its answer is not known yet. CMPay will resolve it by itself."},
	} {
		doc := renderDoc(t, paymentPage(paymentView{Payment: p, Refunds: c.refunds, ProcessorCalls: c.calls}))
		if got := squash(doc.Find("p.processor-note").First().Text()); got != c.want {
			t.Errorf("%d calls, %d refunds: %q, want %q", len(c.calls), len(c.refunds), got, c.want)
		}
		if got := doc.Find("table.refunds th").First().Text(); got != "Requested (UTC)" {
			t.Errorf("the refunds table's first column is %q", got)
		}
	}
}

// The overview's count of captures, cancels and refunds waiting for the
// processor links to the list of their payments, which has a checkbox of
// its own and says in each row what waits: the count was text alone, and
// support could not find the payments it counted.
func TestListOfPaymentsWaitingForTheProcessor(t *testing.T) {
	t.Parallel()
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	capturing := samplePayment("pay_1", "order-1", 0, 0)
	capturing.Status, capturing.Captured, capturing.PendingOperation = payments.StatusAuthorized, brl(0), payments.OpCapture
	refunding := samplePayment("pay_2", "order-2", 0, 0)
	refunding.Reserved = brl(300)
	stats := payments.Stats{Hours: make([]payments.HourStats, 24),
		Waiting: map[payments.Operation]int{payments.OpCapture: 1, payments.OpRefund: 1}}
	form := parseFilterForm(url.Values{"waiting": {"1"}})
	if f, err := form.filter(); err != nil || !f.WaitingOperation {
		t.Fatalf("waiting=1: %+v, %v; want WaitingOperation", f, err)
	}
	doc := renderDoc(t, listPage(listView{Form: form, Stats: stats, Chart: newChart(stats),
		Payments: []payments.Payment{refunding, capturing, samplePayment("pay_3", "order-3", 0, 0)}}))
	link := doc.Find(`.glance li.operations a`)
	if href := link.AttrOr("href", ""); href != "/admin?waiting=1" || !strings.Contains(squash(link.Text()), "2 captures, cancels and refunds waiting for the processor") {
		t.Errorf("the overview's count links to %q (%q), want /admin?waiting=1", href, squash(link.Text()))
	}
	if _, checked := doc.Find(`input[name=waiting]`).Attr("checked"); !checked {
		t.Error("the waiting checkbox is not checked under waiting=1")
	}
	rows := doc.Find("table.payments tbody tr")
	for i, want := range []string{"refund waiting for the processor (3.00 BRL held)", "capture waiting for the processor", ""} {
		if got := squash(rows.Eq(i).Find("small.waiting").Text()); got != want {
			t.Errorf("row %d says %q waits, want %q", i, got, want)
		}
	}
	if got := parseFilterForm(mustQuery(t, form.url("c"))); !got.Waiting || got.After != "c" {
		t.Errorf("the next page's address %s loses the filter: %+v", form.url("c"), got)
	}
	if _, err := parseFilterForm(url.Values{"waiting": {"processor"}}).filter(); err == nil {
		t.Error("waiting=processor was taken as a checkbox's value")
	}
}
