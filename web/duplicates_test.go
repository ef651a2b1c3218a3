package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
	"github.com/cmpay/cmpay/staff"
)

// A payment for which Stripe holds a second charge (a PaymentIntent
// carrying its id, captured, besides the one it settled on), found by the
// second one's event: its page says so at the top, in plain words, with
// what to do, and still shows the payment's own reference.
func TestPaymentPageShowsADuplicateCharge(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		d := stripedouble.New(stripedouble.Options{})
		t.Cleanup(d.Close)
		cfg := processor.DefaultConfig()
		cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase = processor.NameStripe, "sk_test_web", d.URL()
		conn, err := stripe.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.CloseIdleConnections)
		svc, err := payments.NewService(db.Gorm, payments.Config{Processor: conn, ProcessorTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		token := "pm_card_visa"
		res, err := svc.Create(t.Context(), payments.CreateRequest{ClientID: "shop-1", IdempotencyKey: "order-dup",
			Amount: "100.00", Currency: "BRL", Method: payments.MethodCreditCard, PaymentMethodToken: &token,
			Origin: payments.Origin{Transport: "test"}})
		if err != nil || res.Payment.Status != payments.StatusCaptured {
			t.Fatalf("create: %+v, %v", res.Payment, err)
		}
		p := res.Payment
		// The second charge, as a late roll-forward of a first send leaves it.
		second, err := conn.CreatePayment(t.Context(), processor.CreatePaymentRequest{IdempotencyKey: "rolled-forward",
			PaymentID: p.ID, AmountMinor: 10000, Currency: "BRL", Method: processor.MethodCreditCard,
			PaymentMethodToken: token, Capture: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range d.EventsFor(second.Reference) {
			ev, err := stripe.DecodeEvent(e.Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.ApplyProcessorEvent(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		st := staff.New(db.Gorm, staff.Config{Hash: staff.HashParams{Memory: 64, Time: 1, Threads: 1}})
		t.Cleanup(st.Close)
		srv := httptest.NewServer(Admin(AdminDeps{Payments: svc, Staff: st}))
		t.Cleanup(srv.Close)
		c := signedIn(t, srv, st, "vera", staff.Viewer)
		doc := getDoc(t, c, srv.URL+"/admin/payments/"+p.ID)
		notes := doc.Find("section.duplicates p.duplicate")
		want := "Stripe holds a second charge for this payment, " + second.Reference +
			", 100.00 BRL, succeeded: refund it in Stripe's dashboard."
		if notes.Length() != 1 || squash(notes.Text()) != want {
			t.Errorf("duplicate notes %q, want %q", squash(notes.Text()), want)
		}
		found := squash(doc.Find("section.duplicates").Text())
		if !strings.Contains(found, "by the processor's event about it") {
			t.Errorf("the section does not say how it was found: %s", found)
		}
		// The section comes before the payment's fields: it points down to them.
		if !strings.Contains(found, "the payment this page shows, with its processor reference below, is the one it settled on") {
			t.Errorf("the section does not say which charge the payment settled on: %s", found)
		}
		if ref := doc.Find("code.processor-reference").Text(); ref != p.ProcessorReference || ref == second.Reference {
			t.Errorf("reference shown %q, want the payment's own %s", ref, p.ProcessorReference)
		}
	})
}

// A payment with no duplicate has no such section.
func TestPaymentPageWithoutDuplicates(t *testing.T) {
	t.Parallel()
	doc := renderDoc(t, paymentPage(paymentView{Payment: samplePayment("pay_1", "order-1", 0, 0)}))
	if doc.Find("section.duplicates").Length() != 0 {
		t.Error("a duplicates section without a duplicate")
	}
}

// Each finder of a duplicate is named: the late check apart from
// recovery's reads, since it reads a day after the operation settled.
func TestDuplicatesFoundSaysByWhat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	got := duplicatesFound([]payments.Duplicate{
		{Reference: "pi_2", FoundBy: payments.FoundByEvent, FoundAt: at},
		{Reference: "pi_3", FoundBy: payments.FoundByRecovery, FoundAt: at},
		{Reference: "pi_4", FoundBy: payments.FoundByLateCheck, FoundAt: at},
	})
	for _, want := range []string{"pi_2 on " + precise(at) + " UTC by the processor's event about it",
		"pi_3 on " + precise(at) + " UTC by recovery's read of the processor",
		"pi_4 on " + precise(at) + " UTC by the late check, the processor read again a day after the operation was sent " +
			"under a new key"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
}

// Each kind of duplicate says what to do with it.
func TestDuplicateNotes(t *testing.T) {
	t.Parallel()
	brl := payments.Money{Minor: 400, Currency: "BRL"}
	for _, c := range []struct {
		d    payments.Duplicate
		want string
	}{
		{payments.Duplicate{Processor: "stripe", Reference: "pi_2", Operation: payments.OpCreate, Amount: brl, State: "authorized"},
			"Stripe holds a second authorization for this payment, pi_2, 4.00 BRL, not captured: cancel it in Stripe's " +
				"dashboard, or it holds the payer's money until it expires."},
		{payments.Duplicate{Processor: "stripe", Reference: "pi_2", Operation: payments.OpCreate, Amount: brl, State: "pending"},
			"Stripe holds a second payment for this payment, pi_2, 4.00 BRL, found waiting for its payer: CMPay cancels " +
				"it at Stripe so that it cannot be paid (a failed cancel is tried again; an ERROR line says if the payer paid " +
				"first). " +
				"Should Stripe's dashboard show it paid, refund it there."},
		{payments.Duplicate{Processor: "stripe", Reference: "pi_2", Operation: payments.OpCreate, Amount: brl, State: "processing"},
			"Stripe holds a second charge for this payment, pi_2, 4.00 BRL, processing: once it has succeeded, refund it " +
				"in Stripe's dashboard."},
		{payments.Duplicate{Processor: "stripe", Reference: "re_2", RefundID: "ref_1", Operation: payments.OpRefund, Amount: brl,
			State: "succeeded"}, "Stripe holds a second refund of this payment's refund ref_1, re_2, 4.00 BRL, succeeded: the " +
			"payer got this money back twice. A refund cannot be undone; settle it with the payer."},
		{payments.Duplicate{Processor: "stripe", Reference: "re_2", RefundID: "ref_1", Operation: payments.OpRefund, Amount: brl,
			State: "pending"}, "Stripe holds a second refund of this payment's refund ref_1, re_2, 4.00 BRL, pending: the " +
			"payer gets this money back twice once it succeeds. A refund cannot be undone; settle it with the payer."},
	} {
		if got := duplicateNote(c.d, nil); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// A refund's duplicate whose own refund CMPay shows FAILED (its new key's
// request refused, the first one completed by Stripe later) is the one
// refund made, not a second: the note and the heading say so, and what to
// do; beside a refund that succeeded the note is still a second refund.
func TestDuplicateOfAFailedRefund(t *testing.T) {
	t.Parallel()
	brl := payments.Money{Minor: 400, Currency: "BRL"}
	failed := []payments.Refund{{ID: "ref_1", Amount: brl, Status: payments.RefundFailed, FailureCode: "charge_already_refunded"}}
	for _, c := range []struct {
		state, want string
	}{
		{"succeeded", "Stripe refunded this payment's refund ref_1 as re_2, 4.00 BRL, succeeded, while CMPay shows that " +
			"refund FAILED: the payer got this money back once, not twice, and CMPay's refunded amount understates what " +
			"was refunded by 4.00 BRL. Check re_2 in Stripe's dashboard."},
		{"pending", "Stripe is refunding this payment's refund ref_1 as re_2, 4.00 BRL, pending, while CMPay shows that " +
			"refund FAILED: the payer gets this money back once it succeeds, not twice, and CMPay's refunded amount " +
			"understates what is being refunded by 4.00 BRL. Check re_2 in Stripe's dashboard."},
	} {
		d := payments.Duplicate{Processor: "stripe", Reference: "re_2", RefundID: "ref_1", Operation: payments.OpRefund,
			Amount: brl, State: c.state, FoundBy: payments.FoundByLateCheck}
		view := paymentView{Payment: samplePayment("pay_1", "order-1", 0, 0), Refunds: failed,
			Duplicates: []payments.Duplicate{d}}
		doc := renderDoc(t, paymentPage(view))
		if got := squash(doc.Find("section.duplicates p.duplicate").Text()); got != c.want {
			t.Errorf("%s: note %q, want %q", c.state, got, c.want)
		}
		if h := doc.Find("section.duplicates h2").Text(); h != "Refunded at the processor, FAILED in CMPay" {
			t.Errorf("%s: heading %q, want the refund FAILED in CMPay, not money moved twice", c.state, h)
		}
	}
	succeeded := []payments.Refund{{ID: "ref_1", Amount: brl, Status: payments.RefundSucceeded}}
	d := payments.Duplicate{Processor: "stripe", Reference: "re_2", RefundID: "ref_1", Operation: payments.OpRefund,
		Amount: brl, State: "succeeded"}
	doc := renderDoc(t, paymentPage(paymentView{Payment: samplePayment("pay_1", "order-1", 0, 0), Refunds: succeeded,
		Duplicates: []payments.Duplicate{d}}))
	if note := squash(doc.Find("section.duplicates p.duplicate").Text()); !strings.Contains(note, "the payer got this money back twice") {
		t.Errorf("beside a refund that succeeded: note %q, want a second refund", note)
	}
	if h := doc.Find("section.duplicates h2").Text(); h != "Money moved twice" {
		t.Errorf("beside a refund that succeeded: heading %q, want Money moved twice", h)
	}
}

// A second Pix or boleto found waiting for its payer moved no money (CMPay
// cancels it at the processor): the heading says so, unless another
// duplicate beside it did move money twice.
func TestDuplicateWaitingForItsPayerHeading(t *testing.T) {
	t.Parallel()
	brl := payments.Money{Minor: 400, Currency: "BRL"}
	waiting := payments.Duplicate{Processor: "stripe", Reference: "pi_2", Operation: payments.OpCreate, Amount: brl, State: "pending"}
	charged := payments.Duplicate{Processor: "stripe", Reference: "pi_3", Operation: payments.OpCreate, Amount: brl, State: "succeeded"}
	failed := []payments.Refund{{ID: "ref_1", Amount: brl, Status: payments.RefundFailed}}
	refunded := payments.Duplicate{Processor: "stripe", Reference: "re_2", RefundID: "ref_1", Operation: payments.OpRefund,
		Amount: brl, State: "succeeded"}
	for _, c := range []struct {
		name string
		ds   []payments.Duplicate
		want string
	}{
		{"waiting alone", []payments.Duplicate{waiting}, "A second payment found waiting for its payer"},
		{"beside a second charge", []payments.Duplicate{waiting, charged}, "Money moved twice"},
		{"beside a FAILED refund's", []payments.Duplicate{waiting, refunded}, "Found at the processor besides CMPay's record"},
	} {
		doc := renderDoc(t, paymentPage(paymentView{Payment: samplePayment("pay_1", "order-1", 0, 0), Refunds: failed,
			Duplicates: c.ds}))
		if h := doc.Find("section.duplicates h2").Text(); h != c.want {
			t.Errorf("%s: heading %q, want %q", c.name, h, c.want)
		}
	}
}
