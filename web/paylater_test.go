package web

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/payments"
)

// A pending Pix's page shows its code with a QR code of it, the expiry,
// and the processor's events; a card payment's shows no such section.
func TestPayLaterSection(t *testing.T) {
	t.Parallel()
	const code = "00020101021226800014br.gov.bcb.pix2558sandbox.example/pix/v2/cobv/abc520400005303986540525.005802BR6304ABCD"
	qr, err := qrDataURL(code)
	if err != nil {
		t.Fatal(err)
	}
	expires := created.Add(15 * time.Minute)
	applied := created.Add(time.Minute)
	p := samplePayment("pay_pix", "order-1", 0, 0)
	p.Status = payments.StatusPending
	doc := renderDoc(t, payLater(paymentView{Payment: p, PixQR: qr,
		Async: payments.AsyncState{NextAction: &payments.NextAction{Type: payments.NextActionPixCode, PixCode: code, ExpiresAt: expires}},
		ProcessorEvents: []intake.Received{
			{ID: "evt_1", Type: "payment_intent.succeeded", Created: created, ReceivedAt: created, AppliedAt: &applied},
			{ID: "evt_2", Type: "charge.refunded", Created: created, ReceivedAt: created},
		}}))
	if got := doc.Find("dd code").First().Text(); got != code {
		t.Errorf("the Pix code shown: %q", got)
	}
	src, _ := doc.Find("img.qr").Attr("src")
	raw, ok := strings.CutPrefix(src, "data:image/png;base64,")
	if !ok {
		t.Fatalf("the QR code's src: %.40q", src)
	}
	pngBytes, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil || img.Bounds().Dx() != 192 {
		t.Errorf("the QR code is not a 192 px PNG: %v", err)
	}
	if !strings.Contains(doc.Text(), "Payable until") || !strings.Contains(doc.Text(), precise(expires)) {
		t.Errorf("no expiry in %q", doc.Text())
	}
	rows := doc.Find("table tbody tr")
	if rows.Length() != 2 || !strings.Contains(rows.Eq(1).Text(), "waiting for the payment to be recorded") {
		t.Errorf("events: %q", rows.Text())
	}

	card := samplePayment("pay_card", "order-2", 0, 0)
	card.Method = payments.MethodCreditCard
	if got := renderDoc(t, payLater(paymentView{Payment: card})).Find("h2").Length(); got != 0 {
		t.Errorf("a card payment shows the paid-later section")
	}
}

// The overview counts the payments and operations that wait, whatever
// their age, and the day's payments that ended unpaid, each payment count
// a link to the list of that status.
// An expired Pix is not headed "Paid by the payer" and shows no QR code to
// scan; a boleto's line is shown in its printed groups.
func TestPayLaterSectionAfterTheFact(t *testing.T) {
	t.Parallel()
	const code = "00020101021226800014br.gov.bcb.pix"
	qr, err := qrDataURL(code)
	if err != nil {
		t.Fatal(err)
	}
	pix := payments.AsyncState{NextAction: &payments.NextAction{Type: payments.NextActionPixCode, PixCode: code, ExpiresAt: created}}
	for _, c := range []struct {
		status payments.Status
		title  string
		qr     int
	}{{payments.StatusPending, "To be paid by the payer", 1}, {payments.StatusExpired, "Not paid: expired", 0}, {payments.StatusCaptured, "Paid by the payer", 0}} {
		p := samplePayment("pay_pix", "order-1", 0, 0)
		p.Status = c.status
		doc := renderDoc(t, payLater(paymentView{Payment: p, PixQR: qr, Async: pix}))
		if got := doc.Find("h2").Text(); got != c.title || doc.Find("img.qr").Length() != c.qr {
			t.Errorf("%s: heading %q, %d QR codes; want %q, %d", c.status, got, doc.Find("img.qr").Length(), c.title, c.qr)
		}
	}
	const line = "23790123456000000000300000000000100000000001000"
	boleto := samplePayment("pay_boleto", "order-2", 0, 0)
	boleto.Method, boleto.Status = payments.MethodBoleto, payments.StatusPending
	doc := renderDoc(t, payLater(paymentView{Payment: boleto,
		Async: payments.AsyncState{NextAction: &payments.NextAction{Type: payments.NextActionBoleto, BoletoLine: line, ExpiresAt: created}}}))
	if got, want := doc.Find("dd code").Text(), "23790.12345 60000.000003 00000.000000 1 00000000001000"; got != want {
		t.Errorf("boleto line %q, want %q", got, want)
	}
}

func TestGlanceCountsWaitingAndUnpaid(t *testing.T) {
	t.Parallel()
	st := payments.Stats{Hours: make([]payments.HourStats, 24),
		Unsettled: map[payments.Status]int{payments.StatusPending: 2},
		Unpaid:    map[payments.Status]int{payments.StatusExpired: 1},
		Waiting:   map[payments.Operation]int{payments.OpCapture: 1, payments.OpRefund: 2}}
	doc := renderDoc(t, glance(st, newChart(st)))
	items := doc.Find("ul.statuses li")
	if items.Length() != 5 {
		t.Fatalf("%d status counts, want 5", items.Length())
	}
	for i, want := range []string{"0 waiting for the processor (any age)",
		"3 captures, cancels and refunds waiting for the processor (1 capture, 2 refunds; any age, CMPay resolves them)",
		"2 waiting for their payer (Pix, boleto; any age)", "0 declined", "1 expired unpaid"} {
		if got := strings.Join(strings.Fields(items.Eq(i).Text()), " "); got != want {
			t.Errorf("count %d: %q, want %q", i, got, want)
		}
	}
	if href, _ := items.Eq(2).Find("a").Attr("href"); !strings.Contains(href, "status=PENDING") {
		t.Errorf("the PENDING count links to %q", href)
	}
}
