package web

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/payments"
)

// loopView is a payment created once, then replayed n times by a client in
// a retry loop, then refunded.
func loopView(n int) paymentView {
	p := samplePayment("pay_loop", "order-loop", n, 0)
	at := func(i int) time.Time { return created.Add(time.Duration(i) * time.Second) }
	view := paymentView{Payment: p}
	add := func(op payments.Operation, key string, o payments.Outcome, t time.Time) {
		view.Attempts = append(view.Attempts, attemptView{Attempt: payments.Attempt{Operation: op, IdempotencyKey: key,
			Outcome: o, At: t, Transport: "rest"}})
	}
	add(payments.OpCreate, "order-loop", payments.OutcomeCreated, at(0))
	for i := range n {
		add(payments.OpCreate, "order-loop", payments.OutcomeReplayed, at(i+1))
	}
	add(payments.OpRefund, "refund-1", payments.OutcomeApplied, at(n+1))
	return view
}

// A run of replays shows its first and last, and one line for the rest:
// 20,000 replays made the page 9 MB.
func TestTimelineFoldsRunsOfReplays(t *testing.T) {
	t.Parallel()
	view := loopView(20_000)
	var buf bytes.Buffer
	if err := paymentPage(view).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 100_000 {
		t.Errorf("the page is %d bytes", buf.Len())
	}
	doc := renderDoc(t, paymentPage(view))
	rows := doc.Find("table.timeline > tbody > tr")
	var got []string
	rows.Each(func(_ int, r *goquery.Selection) {
		got = append(got, strings.Join(strings.Fields(r.Text()), " "))
	})
	if len(got) != 5 {
		t.Fatalf("%d rows, want 5 (created, first replay, the fold, last replay, refund): %q", len(got), got)
	}
	for i, want := range []string{"CREATED", "REPLAYED", "… and 19,998 more replays, from 2026-12-02 09:30:17 to 2026-12-02 15:03:34",
		"REPLAYED", "APPLIED"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("row %d: %q, want it to say %q", i, got[i], want)
		}
	}
}

// Runs too short to fold are shown whole, and a timeline that does not
// fold into runs (outcomes alternating) is cut to its first and last
// rows, with one line counting the requests between.
func TestTimelineRowsAreBounded(t *testing.T) {
	t.Parallel()
	if rows := timelineRows(loopView(2).Attempts); len(rows) != 4 {
		t.Errorf("two replays: %d rows, want all 4", len(rows))
	}
	var alternating []attemptView
	for i := range 5000 {
		o := payments.OutcomeReplayed
		if i%2 == 1 {
			o = payments.OutcomeRejected
		}
		alternating = append(alternating, attemptView{Attempt: payments.Attempt{Operation: payments.OpCreate,
			IdempotencyKey: "k", Outcome: o, At: created.Add(time.Duration(i) * time.Second)}})
	}
	rows := timelineRows(alternating)
	if len(rows) != maxTimelineRows+1 {
		t.Fatalf("%d rows, want %d", len(rows), maxTimelineRows+1)
	}
	fold := rows[maxTimelineRows/2]
	if fold.Folded != 5000-maxTimelineRows || fold.Noun != "requests" || !rows[len(rows)-1].Attempt.At.Equal(alternating[4999].At) {
		t.Errorf("the middle line stands for %d %s, want %d requests; last row at %s", fold.Folded, fold.Noun,
			5000-maxTimelineRows, rows[len(rows)-1].Attempt.At)
	}
}

func TestGrouped(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 19998: "19,998", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// Amounts and counts are read with their thousands grouped: "1234.56 BRL"
// and "50017 created" were hard to read; an input keeps the plain number.
func TestNumbersAreGroupedForReading(t *testing.T) {
	t.Parallel()
	for m, want := range map[payments.Money]string{
		{Minor: 123456, Currency: "BRL"}: "1,234.56 BRL", {Minor: 99999, Currency: "BRL"}: "999.99 BRL",
		{Minor: 1234567, Currency: "JPY"}: "1,234,567 JPY", {Minor: -123456, Currency: "BRL"}: "-1,234.56 BRL",
	} {
		if got := money(m); got != want {
			t.Errorf("money(%+v) = %q, want %q", m, got, want)
		}
	}
	st := payments.Stats{Hours: make([]payments.HourStats, 24), Counts: payments.Counts{Created: 50017}}
	if got := squash(renderDoc(t, glance(st, newChart(st))).Find("li.created").Text()); got != "50,017 created" {
		t.Errorf("created count %q", got)
	}
	p := samplePayment("pay_big", "big", 0, 0)
	p.Method, p.Status, p.Captured.Minor, p.Amount.Minor = payments.MethodCreditCard, payments.StatusAuthorized, 0, 123456
	doc := renderDoc(t, paymentPage(paymentView{Payment: p, Actions: newActionForms(p)}))
	if got, _ := doc.Find("#capture-amount").Attr("value"); got != "1234.56" {
		t.Errorf("capture input %q, want 1234.56", got)
	}
	if got := doc.Find("dd.amount").First().Text(); got != "1,234.56 BRL" {
		t.Errorf("amount shown %q", got)
	}
}
