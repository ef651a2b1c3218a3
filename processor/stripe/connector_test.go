package stripe

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/iso4217"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

func TestCardLifecycle(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	p, err := conn.CreatePayment(ctx, cardReq("cmpay_op1", "pay_1", "pm_card_visa", false))
	if err != nil || p.State != processor.PaymentAuthorized || p.PaymentID != "pay_1" || p.AmountMinor != 1050 || p.Currency != "BRL" {
		t.Fatalf("create: %+v %v", p, err)
	}
	c, err := conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_op2", Reference: p.Reference, AmountMinor: 1000, Currency: "BRL"})
	if err != nil || c.State != processor.PaymentCaptured || c.CapturedMinor != 1000 {
		t.Fatalf("capture: %+v %v", c, err)
	}
	r, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_op3", PaymentReference: p.Reference, RefundID: "ref_1", AmountMinor: 400, Currency: "BRL"})
	if err != nil || r.State != processor.RefundSucceeded || r.AmountMinor != 400 || r.RefundID != "ref_1" || r.PaymentReference != p.Reference {
		t.Fatalf("refund: %+v %v", r, err)
	}
	if got, err := conn.GetRefund(ctx, r.Reference); err != nil || got != r {
		t.Errorf("get refund: %+v %v", got, err)
	}
	if list, err := conn.ListRefunds(ctx, p.Reference); err != nil || len(list) != 1 || list[0] != r {
		t.Errorf("list refunds: %+v %v", list, err)
	}
	if got, err := conn.GetPayment(ctx, p.Reference); err != nil || got.State != processor.PaymentCaptured || got.CapturedMinor != 1000 {
		t.Errorf("get: %+v %v", got, err)
	}
	found, err := conn.FindPayments(ctx, "pay_1")
	if err != nil || len(found) != 1 || found[0].Reference != p.Reference {
		t.Errorf("find: %+v %v", found, err)
	}
	l := d.Ledger(p.Reference)
	if l.Authorizations != 1 || l.Captures != 1 || l.Refunds != 1 || l.Captured != 1000 || l.Refunded != 400 {
		t.Errorf("ledger %+v", l)
	}
}

func TestCaptureAtOnceAndCancel(t *testing.T) {
	conn, _, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	p, err := conn.CreatePayment(ctx, cardReq("cmpay_a", "pay_a", "pm_card_mastercard", true))
	if err != nil || p.State != processor.PaymentCaptured || p.CapturedMinor != 1050 {
		t.Fatalf("create: %+v %v", p, err)
	}
	p, _ = conn.CreatePayment(ctx, cardReq("cmpay_b", "pay_b", "pm_card_visa", false))
	x, err := conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_c", Reference: p.Reference})
	if err != nil || x.State != processor.PaymentCanceled {
		t.Fatalf("cancel: %+v %v", x, err)
	}
	// Capturing a canceled intent answers the state it is in: canceled.
	got, err := conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_d", Reference: p.Reference, AmountMinor: 1050, Currency: "BRL"})
	if err != nil || got.State != processor.PaymentCanceled {
		t.Errorf("capture after cancel: %+v %v, want the intent canceled", got, err)
	}
	// Canceling it again under a new key answers the state it is in.
	if again, err := conn.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_e", Reference: p.Reference}); err != nil || again.State != processor.PaymentCanceled {
		t.Errorf("cancel again: %+v %v", again, err)
	}
}

// Declines are known and refused, with the most specific code and the
// intent's reference; an unknown payment method is an invalid request.
func TestDeclines(t *testing.T) {
	conn, _, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	for token, code := range map[string]string{
		"pm_card_chargeDeclined":                  "generic_decline",
		"pm_card_chargeDeclinedInsufficientFunds": "insufficient_funds",
	} {
		_, err := conn.CreatePayment(ctx, cardReq("cmpay_"+token, "pay_"+token, token, true))
		pe := asError(t, err)
		if pe.Kind != processor.KindDeclined || pe.Code != code || pe.HTTPStatus != 402 || pe.Reference == "" {
			t.Errorf("%s: %+v", token, pe)
		}
		read, err := conn.GetPayment(ctx, pe.Reference)
		if err != nil || read.State != processor.PaymentDeclined || read.DeclineCode != code {
			t.Errorf("%s read: %+v %v", token, read, err)
		}
		// Asking again replays the decline, still known.
		_, err = conn.CreatePayment(ctx, cardReq("cmpay_"+token, "pay_"+token, token, true))
		if pe := asError(t, err); pe.Kind != processor.KindDeclined || !pe.Replayed {
			t.Errorf("%s replay: %+v", token, pe)
		}
	}
	_, err := conn.CreatePayment(ctx, cardReq("cmpay_x", "pay_x", "pm_nope", true))
	if pe := asError(t, err); pe.Kind != processor.KindInvalidRequest || pe.Code != "resource_missing" {
		t.Errorf("unknown token: %+v", pe)
	}
}

// Requests CMPay must not send are refused before anything is sent.
func TestRefusedBeforeSending(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	bad := []processor.CreatePaymentRequest{
		cardReq("", "pay", "pm_card_visa", true), cardReq("cmpay_1", "pay", "", true),
		{IdempotencyKey: "cmpay_2", AmountMinor: 1050, Currency: "BRL", Method: processor.MethodPix, Capture: false},
		{IdempotencyKey: "cmpay_3", AmountMinor: 0, Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa"},
		{IdempotencyKey: "cmpay_4", AmountMinor: 1005, Currency: "KWD", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa"},
		{IdempotencyKey: "cmpay_5", AmountMinor: 1, Currency: "BRL", Method: "CASH"},
	}
	for _, req := range bad {
		if _, err := conn.CreatePayment(ctx, req); !asError(t, err).Refused() {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if _, err := conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "k"}); !asError(t, err).Refused() {
		t.Error("capture without reference")
	}
	if _, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "k", PaymentReference: "pi_1"}); !asError(t, err).Refused() {
		t.Error("refund without amount")
	}
	if n := d.Calls(stripedouble.CreatePaymentIntent); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestPixAndBoleto(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	for _, m := range []processor.Method{processor.MethodPix, processor.MethodBoleto} {
		req := processor.CreatePaymentRequest{IdempotencyKey: "cmpay_" + string(m), PaymentID: "pay_" + string(m),
			AmountMinor: 1050, Currency: "BRL", Method: m, Capture: true}
		p, err := conn.CreatePayment(ctx, req)
		if err != nil || p.State != processor.PaymentPending || p.NextAction == nil || p.NextAction.ExpiresAt.IsZero() || p.NextAction.HostedURL == "" {
			t.Fatalf("%s: %+v %v", m, p, err)
		}
		if m == processor.MethodPix && (p.NextAction.Type != processor.NextActionPixCode || p.NextAction.PixCode == "") {
			t.Errorf("pix next action %+v", p.NextAction)
		}
		if m == processor.MethodBoleto && (p.NextAction.Type != processor.NextActionBoleto || len(p.NextAction.BoletoLine) != 47) {
			t.Errorf("boleto next action %+v", p.NextAction)
		}
		if m == processor.MethodPix {
			if err := d.Pay(p.Reference); err != nil {
				t.Fatal(err)
			}
			if got, _ := conn.GetPayment(ctx, p.Reference); got.State != processor.PaymentCaptured || got.CapturedMinor != 1050 {
				t.Errorf("paid: %+v", got)
			}
		} else {
			if err := d.Expire(p.Reference); err != nil {
				t.Fatal(err)
			}
			if got, _ := conn.GetPayment(ctx, p.Reference); got.State != processor.PaymentExpired || got.DeclineCode != "" {
				t.Errorf("expired: %+v", got)
			}
		}
	}
}

func TestPendingRefunds(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{RefundsPending: true})
	ctx := context.Background()
	p, _ := conn.CreatePayment(ctx, cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	ok, _ := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_2", PaymentReference: p.Reference, RefundID: "r1", AmountMinor: 500, Currency: "BRL"})
	bad, _ := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_3", PaymentReference: p.Reference, RefundID: "r2", AmountMinor: 500, Currency: "BRL"})
	if ok.State != processor.RefundPending || bad.State != processor.RefundPending {
		t.Fatalf("not pending: %+v %+v", ok, bad)
	}
	_ = d.SettleRefund(ok.Reference, true, "")
	_ = d.SettleRefund(bad.Reference, false, "expired_or_canceled_card")
	if got, _ := conn.GetRefund(ctx, ok.Reference); got.State != processor.RefundSucceeded {
		t.Errorf("succeeded: %+v", got)
	}
	if got, _ := conn.GetRefund(ctx, bad.Reference); got.State != processor.RefundFailed || got.FailureCode != "expired_or_canceled_card" {
		t.Errorf("failed: %+v", got)
	}
}

// ISK is counted in hundredths at Stripe: creates, captures and refunds
// convert, and answers convert back.
func TestAmountUnits(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	req := cardReq("cmpay_isk", "pay_isk", "pm_card_visa", false)
	req.Currency, req.AmountMinor = "ISK", 500
	p, err := conn.CreatePayment(ctx, req)
	if err != nil || p.AmountMinor != 500 || d.Ledger(p.Reference).Amount != 50000 {
		t.Fatalf("%+v %v ledger %+v", p, err, d.Ledger(p.Reference))
	}
	c, err := conn.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_c", Reference: p.Reference, AmountMinor: 400, Currency: "ISK"})
	if err != nil || c.CapturedMinor != 400 || d.Ledger(p.Reference).Captured != 40000 {
		t.Fatalf("capture %+v %v ledger %+v", c, err, d.Ledger(p.Reference))
	}
	r, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_r", PaymentReference: p.Reference, AmountMinor: 100, Currency: "ISK"})
	if err != nil || r.AmountMinor != 100 || d.Ledger(p.Reference).Refunded != 10000 {
		t.Fatalf("refund %+v %v ledger %+v", r, err, d.Ledger(p.Reference))
	}
	if _, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_r2", PaymentReference: p.Reference, AmountMinor: 100}); !asError(t, err).Refused() {
		t.Errorf("a refund without its currency was sent: %v", err)
	}
}

func TestReadsOfMissingThings(t *testing.T) {
	conn, _, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	for name, err := range map[string]error{
		"get":     second(conn.GetPayment(ctx, "pi_nope")),
		"refund":  second(conn.GetRefund(ctx, "re_nope")),
		"list":    second(conn.ListRefunds(ctx, "pi_nope")),
		"get ''":  second(conn.GetPayment(ctx, "")),
		"list ''": second(conn.ListRefunds(ctx, "")),
	} {
		if pe := asError(t, err); pe.Kind != processor.KindNotFound || !pe.Known() {
			t.Errorf("%s: %+v", name, pe)
		}
	}
	found, err := conn.FindPayments(ctx, "pay_'quoted'")
	if err != nil || found == nil || len(found) != 0 {
		t.Errorf("find none: %#v %v", found, err)
	}
}

func second[T any](_ T, err error) error { return err }

// A wrong key is known (nothing happened) but refuses nothing.
func TestAuthentication(t *testing.T) {
	d := stripedouble.New(stripedouble.Options{})
	defer d.Close()
	cfg := processor.DefaultConfig()
	cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "sk_live_wrong", d.URL(), time.Second
	conn, err := New(cfg, WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.CreatePayment(context.Background(), cardReq("cmpay_1", "pay_1", "pm_card_visa", true))
	if pe := asError(t, err); pe.Kind != processor.KindAuthentication || !pe.Known() || pe.Refused() {
		t.Errorf("%+v", pe)
	}
	if _, err := New(processor.DefaultConfig()); err == nil {
		t.Error("a connector without a key")
	}
}

// Each currency reaches Stripe in Stripe's units, and comes back in ISO
// 4217's: MGA, two decimals at ISO, is whole ariary at Stripe; an amount
// Stripe cannot take, or a currency whose decimals it counts in a way not
// named, is refused before anything is sent; every other currency
// converts and converts back.
func TestEveryCurrencyInStripesUnits(t *testing.T) {
	for _, c := range []struct {
		currency    string
		minor, sent int64
		refused     bool
	}{
		{"BRL", 1050, 1050, false}, {"JPY", 500, 500, false}, {"MGA", 1000, 10, false}, {"MGA", 1050, 0, true},
		{"ISK", 5, 500, false}, {"UGX", 7, 700, false}, {"KWD", 1010, 1010, false}, {"KWD", 1005, 0, true},
		{"IQD", 1000, 0, true}, {"CLF", 10000, 0, true}, {"XYZ", 100, 0, true}, {"BRL", 0, 0, true},
	} {
		sent, err := toStripeAmount(c.minor, c.currency)
		if (err != nil) != c.refused || sent != c.sent {
			t.Errorf("%d %s: sent %d, error %v; want %d, refused %v", c.minor, c.currency, sent, err, c.sent, c.refused)
		}
	}
	for code, digits := range iso4217.All() {
		minor := int64(1_000_000)
		sent, err := toStripeAmount(minor, code)
		if err != nil {
			if _, named := stripeDigits[code]; named || digits == 2 {
				t.Errorf("%s (%d decimals): %v", code, digits, err)
			}
			continue
		}
		if back := fromStripeAmount(sent, code); back != minor {
			t.Errorf("%s: %d minor units sent as %d, read back as %d", code, minor, sent, back)
		}
	}
}

// A 10 MGA payment asks Stripe for 10 ariary, and its answer reads as
// 10.00 MGA.
func TestMGAIsWholeAriaryAtStripe(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	req := cardReq("cmpay_mga", "pay_mga", "pm_card_visa", true)
	req.Currency, req.AmountMinor = "MGA", 1000
	p, err := conn.CreatePayment(context.Background(), req)
	if err != nil || p.AmountMinor != 1000 || p.CapturedMinor != 1000 || d.Ledger(p.Reference).Captured != 10 {
		t.Fatalf("%+v %v ledger %+v", p, err, d.Ledger(p.Reference))
	}
}

// ListRefunds reads every page of an intent's refunds (Stripe's page is 10
// by default): a refund older than the ten newest is found.
func TestListRefundsReadsEveryPage(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	ctx := context.Background()
	p, err := conn.CreatePayment(ctx, cardReq("cmpay_op1", "pay_1", "pm_card_visa", true))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if _, err := conn.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: fmt.Sprint("cmpay_r", i),
			PaymentReference: p.Reference, RefundID: fmt.Sprint("ref_", i), AmountMinor: 10, Currency: "BRL"}); err != nil {
			t.Fatal(err)
		}
	}
	lists := d.Calls(stripedouble.ListRefunds)
	all, err := conn.ListRefunds(ctx, p.Reference)
	if err != nil || len(all) != 12 || !slices.ContainsFunc(all, func(r processor.Refund) bool { return r.RefundID == "ref_0" }) {
		t.Fatalf("listed %d refunds (%v), want 12, ref_0 among them", len(all), err)
	}
	if pages := d.Calls(stripedouble.ListRefunds) - lists; pages != 2 {
		t.Errorf("%d pages read, want 2", pages)
	}
}
