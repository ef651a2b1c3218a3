package web

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/cmpay/cmpay/payments"
)

func renderDoc(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

var created = time.Date(2026, 12, 2, 9, 30, 15, 123456000, time.UTC)

func samplePayment(id, key string, replays, rejections int) payments.Payment {
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	return payments.Payment{
		ID: id, ClientID: "shop-7", IdempotencyKey: key, Method: payments.MethodPix, CreatedAt: created,
		Amount: brl(1050), Status: payments.StatusCaptured, Captured: brl(1050), Refunded: brl(0), CapturedAt: created,
		ReplayCount: replays, RejectedCount: rejections,
	}
}

func TestListPageRows(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 60)
	doc := renderDoc(t, listPage(listView{
		Payments: []payments.Payment{
			samplePayment("pay_1", "plain", 0, 0),
			samplePayment("pay_2", "retried", 3, 0),
			samplePayment("pay_3", long, 0, 2),
			{ID: "pay_4", ClientID: "jp", IdempotencyKey: "y", Method: payments.MethodBoleto, CreatedAt: created,
				Amount: payments.Money{Minor: 1000, Currency: "JPY"}, ReplayCount: 1, RejectedCount: 1},
		},
		NextURL: "/admin?after=abc",
		Chart:   newChart(payments.Stats{Hours: make([]payments.HourStats, 24)}),
	}))

	rows := doc.Find("table.payments tbody tr")
	if rows.Length() != 4 {
		t.Fatalf("%d rows, want one per payment", rows.Length())
	}
	row := func(i int) *goquery.Selection { return rows.Eq(i) }
	if got := row(0).Find("td.num").Text(); got != "10.50 BRL" {
		t.Errorf("amount cell %q, want 10.50 BRL", got)
	}
	// Thousands are grouped for reading (the CSV and inputs keep 1000).
	if got := row(3).Find("td.num").Text(); got != "1,000 JPY" {
		t.Errorf("JPY amount cell %q, want 1,000 JPY", got)
	}
	if row(0).Find(".badge.replayed, .badge.rejected").Length() != 0 || !strings.Contains(row(0).Text(), "no") {
		t.Errorf("a payment never reused shows badges: %q", row(0).Text())
	}
	if got := row(1).Find(".badge.replayed").Text(); got != "replayed ×3" {
		t.Errorf("replayed badge %q", got)
	}
	if got := row(2).Find(".badge.rejected").Text(); got != "rejected ×2" {
		t.Errorf("rejected badge %q", got)
	}
	if row(3).Find(".badge.replayed").Length() != 1 || row(3).Find(".badge.rejected").Length() != 1 {
		t.Errorf("both badges expected: %q", row(3).Text())
	}
	// Support staff copy keys from the list: each is shown in full.
	if got := row(2).Find("a.key code").Text(); got != long {
		t.Errorf("long key shown as %q, want it whole", got)
	}
	if got := row(1).Find(".badge.status").Text(); got != "CAPTURED" {
		t.Errorf("status badge %q, want CAPTURED", got)
	}
	if href, _ := row(1).Find("td a").First().Attr("href"); href != "/admin/payments/pay_2" {
		t.Errorf("row links to %q", href)
	}
	if href, _ := doc.Find("a[rel=next]").Attr("href"); href != "/admin?after=abc" {
		t.Errorf("next page link %q", href)
	}
	if doc.Find("th[scope=col]").Length() != 7 || doc.Find("caption").Length() != 1 {
		t.Error("the table lacks its column headers or caption")
	}
	doc.Find("form.filters input:not([type=checkbox])").Each(func(_ int, in *goquery.Selection) {
		id, _ := in.Attr("id")
		if doc.Find(`label[for="`+id+`"]`).Length() != 1 {
			t.Errorf("input %q has no label", id)
		}
	})
	if doc.Find("script").Length() != 0 {
		t.Error("the admin page has a script")
	}
}

func TestListPageKeepsFiltersInTheForm(t *testing.T) {
	t.Parallel()
	form := filterForm{Q: "abc", Client: "shop-7", Key: "k", From: "2026-12-01", To: "2026-12-02", Flagged: true, Rejected: true}
	doc := renderDoc(t, listPage(listView{Form: form, Error: "from must be a date like 2026-12-31", Chart: newChart(payments.Stats{})}))
	for name, want := range map[string]string{"q": "abc", "client": "shop-7", "key": "k", "from": "2026-12-01", "to": "2026-12-02"} {
		if got, _ := doc.Find(`input[name=` + name + `]`).Attr("value"); got != want {
			t.Errorf("input %s = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]bool{"flagged": true, "replayed": false, "rejected": true} {
		if _, checked := doc.Find(`input[name=` + name + `]`).Attr("checked"); checked != want {
			t.Errorf("checkbox %s checked = %v, want %v", name, checked, want)
		}
	}
	if got := doc.Find("[role=alert]").Text(); !strings.Contains(got, "must be a date") {
		t.Errorf("error shown: %q", got)
	}
}

func TestFilterFormURLRoundTrip(t *testing.T) {
	t.Parallel()
	form := filterForm{Q: "a b", Client: "c&d", Key: "k=1", From: "2026-12-01", Replayed: true}
	u := form.url("cursor")
	parsed := parseFilterForm(mustQuery(t, u))
	if parsed.After != "cursor" {
		t.Errorf("after = %q", parsed.After)
	}
	parsed.After = ""
	if parsed != form {
		t.Errorf("round trip of %s: %+v, want %+v", u, parsed, form)
	}
	// A client id with spaces around it, as the payment page links to it:
	// trimmed, it matched nothing.
	spaced := filterForm{Client: " +shop "}
	if got := parseFilterForm(mustQuery(t, spaced.url(""))); got != spaced {
		t.Errorf("round trip of %s: %+v, want %+v", spaced.url(""), got, spaced)
	}
	if got := parseFilterForm(mustQuery(t, spaced.csvURL())); got != spaced {
		t.Errorf("round trip of %s: %+v, want %+v", spaced.csvURL(), got, spaced)
	}
	// A checkbox's value that means neither on nor off is refused, not
	// dropped: flagged=yes listed every payment.
	if _, err := parseFilterForm(url.Values{"flagged": {"yes"}}).filter(); err == nil || !strings.Contains(err.Error(), `flagged must be 1 or left out, not "yes"`) {
		t.Errorf("flagged=yes: %v", err)
	}
	if f := parseFilterForm(url.Values{"replayed": {"on"}, "rejected": {"0"}}); !f.Replayed || f.Rejected || f.bad != "" {
		t.Errorf("replayed=on&rejected=0: %+v", f)
	}
	if (filterForm{}).url("") != "/admin" {
		t.Error("no filters should be plain /admin")
	}
	f, err := filterForm{To: "2026-12-02"}.filter()
	if err != nil || !f.To.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("to 2026-12-02 includes the whole day: %v %v", f.To, err)
	}
	if _, err := (filterForm{From: "yesterday"}).filter(); err == nil {
		t.Error("a bad date was accepted")
	}
}

func TestPaymentPageTimeline(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_9", "order-9", 1, 1)
	held := payments.Params{payments.FieldOperation: "CREATE_PAYMENT", payments.FieldAmount: "10.5",
		payments.FieldCurrency: "BRL", payments.FieldMethod: "PIX", payments.FieldCapture: "true"}
	attempted := payments.Params{payments.FieldOperation: "CREATE_PAYMENT", payments.FieldAmount: "11",
		payments.FieldCurrency: "BRL", payments.FieldMethod: "BOLETO", payments.FieldCapture: "true"}
	attempts := []payments.Attempt{
		{Operation: payments.OpCreate, IdempotencyKey: "order-9", Outcome: payments.OutcomeCreated, At: created, Transport: "graphql", Params: held},
		{Operation: payments.OpCreate, IdempotencyKey: "order-9", Outcome: payments.OutcomeReplayed, At: created.Add(time.Second), Transport: "rest", Params: held},
		{Operation: payments.OpCreate, IdempotencyKey: "order-9", Outcome: payments.OutcomeRejected, At: created.Add(2 * time.Second), Transport: "graphql",
			DifferingFields: []string{"amount", "method"}, Params: attempted, Held: held},
	}
	view := paymentView{Payment: p}
	for _, a := range attempts {
		view.Attempts = append(view.Attempts, attemptView{Attempt: a, Diffs: diffs(p, a)})
	}
	doc := renderDoc(t, paymentPage(view))

	steps := doc.Find("table.timeline > tbody > tr")
	if steps.Length() != 3 {
		t.Fatalf("%d timeline rows, want 3", steps.Length())
	}
	for i, want := range []string{"CREATED", "REPLAYED", "REJECTED"} {
		if got := steps.Eq(i).Find(".badge").First().Text(); got != want {
			t.Errorf("row %d outcome %q, want %s", i, got, want)
		}
	}
	diff := steps.Eq(2).Find("table.diff tbody tr")
	if diff.Length() != 2 {
		t.Fatalf("%d differing fields, want 2", diff.Length())
	}
	cells := func(i int) string {
		return strings.Join(diff.Eq(i).Find("th, td").Map(func(_ int, s *goquery.Selection) string { return s.Text() }), "|")
	}
	if cells(0) != "amount|10.50 BRL|11.00 BRL" || cells(1) != "method|PIX|BOLETO" {
		t.Errorf("diff rows %q and %q", cells(0), cells(1))
	}
	if got := doc.Find(".full-key").Text(); got != "order-9" {
		t.Errorf("full key %q", got)
	}
	if href, _ := doc.Find(`a:contains("Deliveries about this payment")`).Attr("href"); href != "/admin/webhooks?payment=pay_9" {
		t.Errorf("the link to the payment's webhook deliveries is %q", href)
	}
	summary := doc.Find(".answer").Text()
	for _, want := range []string{"One payment for this key", "The client (REST API) retried the create request once", "nothing was charged again",
		"The client (GraphQL API) reused the key order-9 of the create request once", "no other payment of this amount"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
}

func TestChart(t *testing.T) {
	t.Parallel()
	st := payments.Stats{Hours: make([]payments.HourStats, 24)}
	for i := range st.Hours {
		st.Hours[i].Start = created.Truncate(time.Hour).Add(time.Duration(i-23) * time.Hour)
	}
	st.Hours[23] = payments.HourStats{Start: st.Hours[23].Start, Counts: payments.Counts{Created: 10, Replayed: 5, Rejected: 1}}
	st.Hours[0].Created = 1
	c := newChart(st)
	if len(c.Bars) != 24 || c.Max != 16 {
		t.Fatalf("%d bars, max %d; want 24, 16", len(c.Bars), c.Max)
	}
	last := c.Bars[23]
	total := last.Created.H + last.Replayed.H + last.Rej.H
	if plot := chartHeight - chartTop - chartBottom; total < plot-2 || total > plot+2 {
		t.Errorf("the busiest bar is %d high, want the plot's %d", total, chartHeight-chartTop-chartBottom)
	}
	if last.Rej.H < 1 || c.Bars[0].Created.H < 1 {
		t.Error("a single attempt must stay visible")
	}
	if !(last.Created.Y > last.Replayed.Y && last.Replayed.Y > last.Rej.Y) {
		t.Errorf("segments not stacked: %+v", last)
	}
	doc := renderDoc(t, glance(st, c))
	if doc.Find("svg rect.created").Length() != 2 || doc.Find("svg title").Length() != 24 {
		t.Errorf("svg has %d created rects and %d titles", doc.Find("svg rect.created").Length(), doc.Find("svg title").Length())
	}
	if !strings.Contains(doc.Find("svg title").Last().Text(), "10 created, 5 replayed, 1 rejected") {
		t.Errorf("last bar title %q", doc.Find("svg title").Last().Text())
	}
}

func mustQuery(t *testing.T, u string) map[string][]string {
	t.Helper()
	_, q, _ := strings.Cut(u, "?")
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPaymentPageAttributesRepeats: two repeats of a refund, one the
// client's retry and one a staff member's resubmitted form, are told apart
// and counted against the refund's key, not the payment's.
func TestPaymentPageAttributesRepeats(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_8", "order-8", 2, 0)
	refund := payments.Params{payments.FieldOperation: "REFUND_PAYMENT", payments.FieldAmount: "1"}
	attempts := []payments.Attempt{
		{Operation: payments.OpCreate, IdempotencyKey: "order-8", Outcome: payments.OutcomeCreated, At: created, Transport: "rest"},
		{Operation: payments.OpRefund, IdempotencyKey: "ref-1", Outcome: payments.OutcomeApplied, At: created.Add(time.Minute), Transport: "rest", Params: refund},
		{Operation: payments.OpRefund, IdempotencyKey: "ref-1", Outcome: payments.OutcomeReplayed, At: created.Add(2 * time.Minute), Transport: "rest", Params: refund},
		{Operation: payments.OpRefund, IdempotencyKey: "admin-ref-2", Outcome: payments.OutcomeApplied, At: created.Add(3 * time.Minute), Transport: "admin", Actor: "ana", Params: refund},
		{Operation: payments.OpRefund, IdempotencyKey: "admin-ref-2", Outcome: payments.OutcomeReplayed, At: created.Add(4 * time.Minute), Transport: "admin", Actor: "ana", Params: refund},
	}
	view := paymentView{Payment: p}
	for _, a := range attempts {
		view.Attempts = append(view.Attempts, attemptView{Attempt: a})
	}
	doc := renderDoc(t, paymentPage(view))
	summary := strings.Join(strings.Fields(doc.Find(".answer").Text()), " ")
	for _, want := range []string{
		"The client (REST API) retried the refund request once with the same key ref-1 and the same request: each retry got the first result back and nothing was refunded again.",
		"Staff member ana resubmitted the refund form once with its key admin-ref-2: it got the first result back and nothing was refunded again.",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	for _, wrong := range []string{"retried twice", "nothing was charged again"} {
		if strings.Contains(summary, wrong) {
			t.Errorf("summary says %q, but the create request was never repeated:\n%s", wrong, summary)
		}
	}
	badges := doc.Find(".key-uses li").Map(func(_ int, s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") })
	if want := []string{"refund ref-1 replayed ×1 by the client (REST API)", "refund admin-ref-2 replayed ×1 by staff member ana"}; strings.Join(badges, "|") != strings.Join(want, "|") {
		t.Errorf("badges %q, want %q", badges, want)
	}
}

// A partial capture shows under the status, as a partial refund does:
// "80.00 BRL … CAPTURED" hid that 50.00 was captured.
func TestListShowsPartialCaptures(t *testing.T) {
	t.Parallel()
	partial := samplePayment("pay_p", "partial", 0, 0)
	partial.Captured.Minor = 500
	refunded := partial
	refunded.ID, refunded.Status, refunded.Refunded.Minor = "pay_r", payments.StatusPartiallyRefunded, 100
	whole := samplePayment("pay_w", "whole", 0, 0)
	doc := renderDoc(t, listPage(listView{Payments: []payments.Payment{partial, refunded, whole}, Chart: newChart(payments.Stats{})}))
	rows := doc.Find("table.payments tbody tr")
	for i, want := range []string{"CAPTURED 5.00 BRL captured", "PARTIALLY_REFUNDED 5.00 BRL captured 1.00 BRL refunded", "CAPTURED"} {
		if got := squash(rows.Eq(i).Find(`td[data-label="Status"]`).Text()); got != want {
			t.Errorf("row %d status %q, want %q", i, got, want)
		}
	}
}

// A lookalike list cut at its limit says there may be more: "20 other
// payments" read as a count.
func TestLookalikeCountSaysOrMore(t *testing.T) {
	t.Parallel()
	p := samplePayment("pay_l", "l", 0, 0)
	others := make([]payments.Payment, 20)
	for i := range others {
		others[i] = samplePayment("pay_o"+itoa(i), "o"+itoa(i), 0, 0)
	}
	for _, c := range []struct {
		more bool
		want string
	}{{true, "this client has 20 or more other payments of"}, {false, "this client has 20 other payments of"}} {
		got := squash(renderDoc(t, paymentPage(paymentView{Payment: p, Lookalikes: others, MoreLookalikes: c.more})).Find(".answer").Text())
		if !strings.Contains(got, c.want) {
			t.Errorf("more %v: %q, want it to say %q", c.more, got, c.want)
		}
	}
}
