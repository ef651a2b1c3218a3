package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/processor"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newSandbox(methods processor.SandboxMethods) (*Sandbox, *clock) {
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods = methods
	c := &clock{now: t0}
	return New(cfg, WithClock(c.Now)), c
}

func card(key, token string, capture bool) processor.CreatePaymentRequest {
	return processor.CreatePaymentRequest{IdempotencyKey: key, PaymentID: "pay_1", AmountMinor: 1050,
		Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: token, Capture: capture}
}

// The contract's token table, each row.
func TestTokens(t *testing.T) {
	s, _ := newSandbox(processor.SandboxInstant)
	ctx := context.Background()
	for _, tc := range []struct {
		token   string
		decline string
	}{
		{"", ""}, {TokenVisa, ""}, {TokenMastercard, ""},
		{TokenDeclined, "card_declined"}, {TokenInsufficientFunds, "insufficient_funds"},
		{"pm_card_amex", "invalid_payment_method"}, {"tok_visa", "invalid_payment_method"},
	} {
		for _, capture := range []bool{true, false} {
			p, err := s.CreatePayment(ctx, card("cmpay_k_"+tc.token, tc.token, capture))
			if tc.decline != "" {
				var pe *processor.Error
				if !errors.As(err, &pe) || pe.Kind != processor.KindDeclined || pe.Code != tc.decline || !pe.Refused() {
					t.Fatalf("%q: want decline %s, got %v", tc.token, tc.decline, err)
				}
				read, err := s.GetPayment(ctx, pe.Reference)
				if err != nil || read.State != processor.PaymentDeclined || read.DeclineCode != tc.decline {
					t.Errorf("%q: read of the declined payment: %+v %v", tc.token, read, err)
				}
				continue
			}
			want, captured := processor.PaymentAuthorized, int64(0)
			if capture {
				want, captured = processor.PaymentCaptured, 1050
			}
			if err != nil || p.State != want || p.CapturedMinor != captured || p.AmountMinor != 1050 || p.Reference == "" {
				t.Fatalf("%q capture=%v: %+v %v", tc.token, capture, p, err)
			}
			read, err := s.GetPayment(ctx, p.Reference)
			if err != nil || read.State != want || read.Reference != p.Reference {
				t.Errorf("%q: read %+v %v", tc.token, read, err)
			}
		}
	}
}

// The slow token's first send answers only at the caller's deadline with
// an unknown outcome; any later send with the same key approves, with the
// same reference, on whichever instance (a second Sandbox) it runs.
func TestSlowTokenFirstSendTimesOut(t *testing.T) {
	s, _ := newSandbox(processor.SandboxInstant)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req := card("cmpay_slow", TokenSlow, true)
	_, err := s.CreatePayment(ctx, req)
	var pe *processor.Error
	if !errors.As(err, &pe) || pe.Kind != processor.KindTimeout || pe.Known() {
		t.Fatalf("first send: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("answered before the deadline")
	}
	other, _ := newSandbox(processor.SandboxInstant)
	req.Attempt = 1
	p1, err := other.CreatePayment(context.Background(), req)
	if err != nil || p1.State != processor.PaymentCaptured {
		t.Fatalf("second send: %+v %v", p1, err)
	}
	req.Attempt = 2
	p2, err := s.CreatePayment(context.Background(), req)
	if err != nil || p2.Reference != p1.Reference {
		t.Fatalf("third send differs: %+v %v", p2, err)
	}
}

// Without a deadline of its own, the slow send stops at PROCESSOR_TIMEOUT.
func TestSlowTokenStopsAtProcessorTimeout(t *testing.T) {
	cfg := processor.DefaultConfig()
	cfg.Timeout = 10 * time.Millisecond
	_, err := New(cfg).CreatePayment(context.Background(), card("cmpay_slow", TokenSlow, true))
	var pe *processor.Error
	if !errors.As(err, &pe) || pe.Kind != processor.KindTimeout {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = New(cfg).CreatePayment(ctx, card("cmpay_slow", TokenSlow, true))
	if !errors.As(err, &pe) || pe.Kind != processor.KindCanceled {
		t.Fatalf("canceled: %v", err)
	}
}

func TestInstantPixAndBoletoAreCaptured(t *testing.T) {
	s, _ := newSandbox(processor.SandboxInstant)
	for _, m := range []processor.Method{processor.MethodPix, processor.MethodBoleto, processor.MethodDebitCard} {
		req := card("cmpay_i_"+string(m), "", true)
		req.Method = m
		p, err := s.CreatePayment(context.Background(), req)
		if err != nil || p.State != processor.PaymentCaptured || p.NextAction != nil {
			t.Errorf("%s: %+v %v", m, p, err)
		}
	}
}

// Async Pix and boleto: pending with well-formed instructions, expiring
// 15 minutes and 3 days ahead; Pay captures before the expiry and is
// refused after it, when a read says Expired.
func TestAsyncPixAndBoleto(t *testing.T) {
	for _, tc := range []struct {
		method processor.Method
		typ    processor.NextActionType
		expiry time.Duration
	}{{processor.MethodPix, processor.NextActionPixCode, 15 * time.Minute}, {processor.MethodBoleto, processor.NextActionBoleto, 72 * time.Hour}} {
		s, c := newSandbox(processor.SandboxAsync)
		ctx := context.Background()
		req := card("cmpay_a_"+string(tc.method), "", true)
		req.Method = tc.method
		p, err := s.CreatePayment(ctx, req)
		if err != nil || p.State != processor.PaymentPending || p.NextAction == nil {
			t.Fatalf("%s: %+v %v", tc.method, p, err)
		}
		na := p.NextAction
		if na.Type != tc.typ || !na.ExpiresAt.Equal(t0.Add(tc.expiry)) {
			t.Errorf("%s: next action %+v", tc.method, na)
		}
		if tc.method == processor.MethodPix {
			checkPixCode(t, na.PixCode, "10.50")
		} else {
			checkBoletoLine(t, na.BoletoLine)
		}
		again, _ := s.CreatePayment(ctx, req)
		if again.NextAction.PixCode != na.PixCode || again.NextAction.BoletoLine != na.BoletoLine {
			t.Errorf("%s: same key, other instructions", tc.method)
		}
		if read, _ := s.GetPayment(ctx, p.Reference); read.State != processor.PaymentPending || read.NextAction.PixCode != na.PixCode {
			t.Errorf("%s: read %+v", tc.method, read)
		}
		paid, err := s.Pay(ctx, p.Reference)
		if err != nil || paid.State != processor.PaymentCaptured || paid.CapturedMinor != 1050 {
			t.Errorf("%s: pay %+v %v", tc.method, paid, err)
		}
		c.now = t0.Add(tc.expiry)
		if read, _ := s.GetPayment(ctx, p.Reference); read.State != processor.PaymentExpired {
			t.Errorf("%s: after expiry %s", tc.method, read.State)
		}
		var pe *processor.Error
		if _, err := s.Pay(ctx, p.Reference); !errors.As(err, &pe) || pe.Code != CodePaymentExpired {
			t.Errorf("%s: pay after expiry: %v", tc.method, err)
		}
		req.Capture = false
		if _, err := s.CreatePayment(ctx, req); !errors.As(err, &pe) || !pe.Refused() {
			t.Errorf("%s: capture=false accepted: %v", tc.method, err)
		}
	}
}

func TestPayRefusesCardsAndUnknownReferences(t *testing.T) {
	s, _ := newSandbox(processor.SandboxAsync)
	p, _ := s.CreatePayment(context.Background(), card("cmpay_c", TokenVisa, false))
	var pe *processor.Error
	if _, err := s.Pay(context.Background(), p.Reference); !errors.As(err, &pe) || pe.Code != CodePaymentNotPending {
		t.Errorf("card: %v", err)
	}
	if _, err := s.Pay(context.Background(), "pi_123"); !errors.As(err, &pe) || pe.Kind != processor.KindNotFound {
		t.Errorf("unknown: %v", err)
	}
}

func TestCaptureCancelRefundAlwaysSucceed(t *testing.T) {
	s, _ := newSandbox(processor.SandboxInstant)
	ctx := context.Background()
	p, _ := s.CreatePayment(ctx, card("cmpay_1", TokenVisa, false))
	for _, ref := range []string{p.Reference, ""} { // "" : a payment from before references
		c, err := s.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_2", Reference: ref, AmountMinor: 500, Currency: "BRL"})
		if err != nil || c.State != processor.PaymentCaptured || c.CapturedMinor != 500 {
			t.Errorf("capture %q: %+v %v", ref, c, err)
		}
		x, err := s.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_3", Reference: ref})
		if err != nil || x.State != processor.PaymentCanceled {
			t.Errorf("cancel %q: %+v %v", ref, x, err)
		}
		r, err := s.RefundPayment(ctx, processor.RefundRequest{IdempotencyKey: "cmpay_4", PaymentReference: ref, RefundID: "ref_1", AmountMinor: 300, Currency: "BRL"})
		if err != nil || r.State != processor.RefundSucceeded || r.AmountMinor != 300 || r.RefundID != "ref_1" {
			t.Errorf("refund %q: %+v %v", ref, r, err)
		}
		read, err := s.GetRefund(ctx, r.Reference)
		if err != nil || read.State != processor.RefundSucceeded || read.AmountMinor != 300 {
			t.Errorf("refund read: %+v %v", read, err)
		}
	}
}

// What the sandbox cannot do is a known, non-refusing error; a bad key or
// amount is refused before anything happens.
func TestSandboxRefusals(t *testing.T) {
	s, _ := newSandbox(processor.SandboxInstant)
	ctx := context.Background()
	var pe *processor.Error
	if _, err := s.FindPayments(ctx, "pay_1"); !errors.As(err, &pe) || pe.Kind != processor.KindUnsupported || !pe.Known() {
		t.Errorf("find: %v", err)
	}
	if _, err := s.ListRefunds(ctx, "x"); !errors.As(err, &pe) || pe.Kind != processor.KindUnsupported {
		t.Errorf("list: %v", err)
	}
	for _, ref := range []string{"", "pi_1", "sbx_pi.PIX.c.-1.BRL.0.ok.000000000000000000000000000000", "sbx_pi.PIX.c.1.BRL.0.stolen.000000000000000000000000000000"} {
		if _, err := s.GetPayment(ctx, ref); !errors.As(err, &pe) || pe.Kind != processor.KindNotFound {
			t.Errorf("get %q: %v", ref, err)
		}
	}
	if _, err := s.GetRefund(ctx, "re_1"); !errors.As(err, &pe) || pe.Kind != processor.KindNotFound {
		t.Errorf("get refund: %v", err)
	}
	bad := []processor.CreatePaymentRequest{card("", "", true), card("a b", "", true)}
	bad = append(bad, card("k", "", true), card("k", "", true), card("k", "", true))
	bad[2].AmountMinor = 0
	bad[3].Currency = "REAL"
	bad[4].Method = "CASH"
	for _, req := range bad {
		if _, err := s.CreatePayment(ctx, req); !errors.As(err, &pe) || pe.Kind != processor.KindInvalidRequest {
			t.Errorf("create %+v: %v", req, err)
		}
	}
	if _, err := s.CapturePayment(ctx, processor.CaptureRequest{}); !errors.As(err, &pe) || !pe.Refused() {
		t.Errorf("capture without key: %v", err)
	}
}

// checkPixCode parses the code's fields and checks the ones a bank's app
// reads, and its CRC.
func checkPixCode(t *testing.T, code, amount string) {
	t.Helper()
	fields := parseTLV(t, code)
	if fields["00"] != "01" || fields["53"] != "986" || fields["58"] != "BR" || fields["54"] != amount {
		t.Errorf("pix code fields %v", fields)
	}
	if acct := parseTLV(t, fields["26"]); acct["00"] != "br.gov.bcb.pix" || len(acct["01"]) != 36 {
		t.Errorf("pix account %v", acct)
	}
	body, crc := code[:len(code)-4], code[len(code)-4:]
	if !strings.HasSuffix(body, "6304") || crc != strings.ToUpper(hex4(crc16CCITT([]byte(body)))) {
		t.Errorf("pix CRC %s wrong for %s", crc, body)
	}
}

func hex4(v uint16) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[v>>12], digits[v>>8&15], digits[v>>4&15], digits[v&15]})
}

func parseTLV(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for len(s) > 0 {
		if len(s) < 4 {
			t.Fatalf("truncated TLV %q", s)
		}
		n := int(s[2]-'0')*10 + int(s[3]-'0')
		if len(s) < 4+n {
			t.Fatalf("TLV %q longer than its text", s)
		}
		out[s[:2]] = s[4 : 4+n]
		s = s[4+n:]
	}
	return out
}

// The CRC is CRC-16/CCITT-FALSE: its check value, and the Central Bank's
// manual's example code, which ends in 1D3D.
func TestCRC16(t *testing.T) {
	if got := crc16CCITT([]byte("123456789")); got != 0x29B1 {
		t.Errorf("check value %04X", got)
	}
	manual := "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***6304"
	if got := crc16CCITT([]byte(manual)); got != 0x1D3D {
		t.Errorf("manual example %04X", got)
	}
}

// checkBoletoLine verifies the line's four check digits, each computed
// here with explicit weight tables, independently of brcode.go.
func checkBoletoLine(t *testing.T, line string) {
	t.Helper()
	if len(line) != 47 || strings.Trim(line, "0123456789") != "" {
		t.Fatalf("boleto line %q is not 47 digits", line)
	}
	for _, f := range [][2]int{{0, 9}, {10, 20}, {21, 31}} {
		if got, want := int(line[f[1]]-'0'), luhnLike(line[f[0]:f[1]]); got != want {
			t.Errorf("field at %d: check digit %d, want %d (%s)", f[0], got, want, line)
		}
	}
	barcode := line[0:4] + line[32:47] + line[4:9] + line[10:20] + line[21:31]
	if got, want := int(line[32]-'0'), generalDV(line[0:4]+line[33:47]+line[4:9]+line[10:20]+line[21:31]); got != want {
		t.Errorf("general check digit %d, want %d (barcode %s)", got, want, barcode)
	}
}

func luhnLike(s string) int {
	sum := 0
	for i := 0; i < len(s); i++ {
		d := int(s[len(s)-1-i] - '0')
		if i%2 == 0 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return (10 - sum%10) % 10
}

func generalDV(s string) int {
	weights := []int{2, 3, 4, 5, 6, 7, 8, 9}
	sum := 0
	for i := 0; i < len(s); i++ {
		sum += int(s[len(s)-1-i]-'0') * weights[i%8]
	}
	r := sum % 11
	if r == 0 || r == 1 || r == 10 {
		return 1
	}
	return 11 - r
}

func TestBoletoLineDetails(t *testing.T) {
	due := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	line := boletoLine(seedOf("k"), 1050, "BRL", due)
	checkBoletoLine(t, line)
	if line[:4] != "9999" || line[37:] != "0000001050" {
		t.Errorf("bank, currency or value wrong: %s", line)
	}
	// 2025-02-22 restarted the factor at 1000; 2026-12-07 is 653 days later.
	if got := dueFactor(due); got != 1653 {
		t.Errorf("factor %d", got)
	}
	if got := dueFactor(time.Date(2025, 2, 21, 0, 0, 0, 0, time.UTC)); got != 9999 {
		t.Errorf("factor before the restart %d", got)
	}
	if line := boletoLine(seedOf("k"), 1050, "USD", due); line[37:] != "0000000000" {
		t.Errorf("a non-BRL boleto must leave the value open: %s", line)
	}
}

// The expiry is never shorter than configured: created at a fraction of a
// second, the reference's whole seconds round up, so a 20 s Pix is
// pending until at least 20 s later and expired at its expiresAt.
func TestExpiryRoundsUp(t *testing.T) {
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods, cfg.SandboxPixExpiry = processor.SandboxAsync, 20*time.Second
	c := &clock{now: t0.Add(122 * time.Millisecond)}
	s := New(cfg, WithClock(c.Now))
	ctx := context.Background()
	req := card("cmpay_round", "", true)
	req.Method = processor.MethodPix
	p, err := s.CreatePayment(ctx, req)
	if err != nil || p.NextAction == nil {
		t.Fatalf("%+v %v", p, err)
	}
	if want := t0.Add(21 * time.Second); !p.NextAction.ExpiresAt.Equal(want) {
		t.Errorf("expiresAt %s, want %s: the next whole second at least 20 s after creation", p.NextAction.ExpiresAt, want)
	}
	c.now = c.now.Add(20 * time.Second)
	if read, _ := s.GetPayment(ctx, p.Reference); read.State != processor.PaymentPending {
		t.Errorf("20 s after creation: %s, want still pending", read.State)
	}
	c.now = p.NextAction.ExpiresAt
	if read, _ := s.GetPayment(ctx, p.Reference); read.State != processor.PaymentExpired {
		t.Errorf("at expiresAt: %s, want expired", read.State)
	}
}
