package stripe

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/processor"

	stripeapi "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"
)

// A create's answer decoded into intentFields maps to the same Payment as
// the whole PaymentIntent does, for each shape paymentFrom reads: captured,
// authorized, declined, expired, a Pix and a boleto waiting, canceled.
func TestIntentFieldsMapLikeTheWholeIntent(t *testing.T) {
	for _, body := range []string{
		`{"id":"pi_1","object":"payment_intent","amount":1050,"amount_received":1050,"currency":"brl","status":"succeeded",
		  "metadata":{"cmpay_payment_id":"pay_1"},"created":1765000000,"payment_method":"pm_1","latest_charge":"ch_1",
		  "payment_method_types":["card"],"last_payment_error":null,"next_action":null,"livemode":false}`,
		`{"id":"pi_2","amount":100,"currency":"isk","status":"requires_capture","metadata":{"cmpay_payment_id":"pay_2"},
		  "created":1765000001,"payment_method_types":["card"]}`,
		`{"id":"pi_3","amount":1050,"currency":"brl","status":"requires_payment_method","metadata":{"cmpay_payment_id":"pay_3"},
		  "last_payment_error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","message":"no",
		  "payment_method":{"id":"pm_x","object":"payment_method"}}}`,
		`{"id":"pi_4","amount":1050,"currency":"brl","status":"requires_payment_method",
		  "last_payment_error":{"type":"invalid_request_error","code":"payment_intent_payment_attempt_expired"}}`,
		`{"id":"pi_5","amount":1050,"currency":"brl","status":"requires_action","payment_method_types":["pix"],
		  "next_action":{"type":"pix_display_qr_code","pix_display_qr_code":{"data":"000201","expires_at":1765003600,
		  "hosted_instructions_url":"https://example.test/pix","image_url_png":"https://example.test/p.png"}}}`,
		`{"id":"pi_6","amount":1050,"currency":"brl","status":"requires_action","payment_method_types":["boleto"],
		  "next_action":{"type":"boleto_display_details","boleto_display_details":{"number":"2379","expires_at":1765090000,
		  "hosted_voucher_url":"https://example.test/b"}}}`,
		`{"id":"pi_7","amount":1050,"currency":"brl","status":"canceled","payment_method_types":["pix"],"canceled_at":1765000009}`,
	} {
		var whole stripeapi.PaymentIntent
		if err := json.Unmarshal([]byte(body), &whole); err != nil {
			t.Fatal(err)
		}
		var f intentFields
		if err := json.Unmarshal([]byte(body), &f); err != nil {
			t.Fatal(err)
		}
		if got, want := paymentFrom(f.intent()), paymentFrom(&whole); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nfields %+v\nwhole  %+v", whole.ID, got, want)
		}
	}
}

// A create goes out with its Content-Length, in one piece, not chunked,
// and its body is the form stripe-go encodes.
func TestCreateIsSentWithItsLength(t *testing.T) {
	type seen struct {
		length   int64
		encoding []string
		body     string
		key      string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.ContentLength, r.TransferEncoding, string(b), r.Header.Get("Idempotency-Key")}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"pi_1","amount":1050,"currency":"brl","status":"succeeded","amount_received":1050,"metadata":{"cmpay_payment_id":"pay_1"}}`)
	}))
	defer srv.Close()
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "stripe", "sk_test_length", srv.URL, 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseIdleConnections()
	p, err := conn.CreatePayment(t.Context(), cardReq("cmpay_len", "pay_1", "pm_card_visa", true))
	if err != nil || p.State != processor.PaymentCaptured || p.Reference != "pi_1" {
		t.Fatalf("create: %+v, %v", p, err)
	}
	s := <-got
	if s.length != int64(len(s.body)) || len(s.encoding) != 0 {
		t.Errorf("sent with length %d and transfer encoding %v; the body has %d bytes", s.length, s.encoding, len(s.body))
	}
	for _, part := range []string{"amount=1050", "confirm=true", "metadata[cmpay_payment_id]=pay_1", "payment_method=pm_card_visa"} {
		if !strings.Contains(mustUnescape(t, s.body), part) {
			t.Errorf("body %q lacks %q", s.body, part)
		}
	}
	if s.key != "cmpay_len" {
		t.Errorf("Idempotency-Key %q, want cmpay_len", s.key)
	}
}

func mustUnescape(t *testing.T, s string) string {
	t.Helper()
	u, err := url.QueryUnescape(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// stripeGoParams are the PaymentIntentCreateParams that say what
// createForm writes, for stripe-go to encode: the reference its form is
// compared with. Nil when createForm must refuse req.
func stripeGoParams(req processor.CreatePaymentRequest) *stripeapi.PaymentIntentCreateParams {
	amount, err := toStripeAmount(req.AmountMinor, req.Currency)
	if err != nil || processor.ValidateKey(req.IdempotencyKey) != nil || !req.Method.Valid() ||
		req.Method.Async() && !req.Capture || !req.Method.Async() && req.PaymentMethodToken == "" {
		return nil
	}
	p := &stripeapi.PaymentIntentCreateParams{
		Amount:   stripeapi.Int64(amount),
		Currency: stripeapi.String(strings.ToLower(req.Currency)),
		Confirm:  stripeapi.Bool(true),
	}
	p.AddMetadata("cmpay_payment_id", req.PaymentID)
	p.SetIdempotencyKey(processor.RequestKey(req.IdempotencyKey, ""))
	if req.PaymentMethodToken != "" {
		p.PaymentMethod = stripeapi.String(req.PaymentMethodToken)
	}
	if req.Method.Async() {
		typ := map[processor.Method]string{processor.MethodPix: "pix", processor.MethodBoleto: "boleto"}[req.Method]
		p.PaymentMethodTypes = []*string{stripeapi.String(typ)}
		if req.PaymentMethodToken == "" {
			p.PaymentMethodData = &stripeapi.PaymentIntentCreatePaymentMethodDataParams{Type: stripeapi.String(typ)}
		}
		return p
	}
	p.PaymentMethodTypes = []*string{stripeapi.String("card")}
	p.ErrorOnRequiresAction = stripeapi.Bool(true)
	if !req.Capture {
		p.CaptureMethod = stripeapi.String(string(stripeapi.PaymentIntentCaptureMethodManual))
	}
	return p
}

// everyCreateShape is each shape of create createForm writes, and the
// refused ones: each method, with and without a token, captured or not,
// with values that need escaping and a currency in other units.
func everyCreateShape() []processor.CreatePaymentRequest {
	var reqs []processor.CreatePaymentRequest
	for _, method := range []processor.Method{processor.MethodCreditCard, processor.MethodPix, processor.MethodBoleto} {
		for _, token := range []string{"", "pm_1", "pm_a b&c=d/é"} {
			for _, capture := range []bool{true, false} {
				reqs = append(reqs, processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_1", PaymentID: "pay_1",
					AmountMinor: 1050, Currency: "BRL", Method: method, PaymentMethodToken: token, Capture: capture})
			}
		}
	}
	return append(reqs,
		processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_2", PaymentID: "pay_2+[x]&y=ç", AmountMinor: 1050,
			Currency: "jpy", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa", Capture: true},
		processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_3", PaymentID: "pay_3", AmountMinor: 5,
			Currency: "ISK", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa"},
		processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_4", PaymentID: "pay_4", AmountMinor: 0,
			Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa"},
		processor.CreatePaymentRequest{IdempotencyKey: "", PaymentID: "pay_5", AmountMinor: 100,
			Currency: "BRL", Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa"},
		processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_6", PaymentID: "pay_6", AmountMinor: 100,
			Currency: "BRL", Method: "CHEQUE", PaymentMethodToken: "pm_card_visa"})
}

// createForm writes, byte for byte, the form stripe-go's own encoding
// (form.AppendTo, as its backend's Call does) makes of the same
// parameters, and refuses what they could not say: a field it leaves out,
// adds, or spells differently fails this.
func TestCreateFormIsStripeGosEncoding(t *testing.T) {
	sent := 0
	for _, req := range everyCreateShape() {
		ours, err := createForm(req)
		ref := stripeGoParams(req)
		if ref == nil {
			if err == nil {
				t.Errorf("%+v: createForm wrote %s, want a refusal", req, ours)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", req, err)
			continue
		}
		sent++
		var theirs form.Values
		form.AppendTo(&theirs, ref)
		if string(ours) != theirs.Encode() {
			t.Errorf("%s, token %q, capture %v:\n createForm %s\n stripe-go  %s", req.Method, req.PaymentMethodToken,
				req.Capture, ours, theirs.Encode())
		}
	}
	if sent != 12 { // a card with either token, captured or not; Pix and boleto captured, with no token or either; JPY, ISK
		t.Errorf("%d shapes of create written, want 12", sent)
	}
}

// createIntent sends what stripe-go's V1PaymentIntents.Create would for
// the same parameters, headers and body alike, for every shape of create
// (each method, with and without a token, captured or not): createIntent
// calls stripe-go's backend itself, with a body of its own, to encode and
// decode less.
func TestCreateIntentSendsWhatStripeGoWould(t *testing.T) {
	type request struct {
		header http.Header
		body   string
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{r.Header.Clone(), string(b)}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"pi_1","amount":1050,"currency":"brl","status":"succeeded","amount_received":1050}`)
	}))
	t.Cleanup(srv.Close)
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = processor.NameStripe, "sk_test_form", srv.URL, 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	shapes := 0
	for _, req := range everyCreateShape() {
		ref := stripeGoParams(req)
		if ref == nil {
			continue // refused before anything is sent
		}
		shapes++
		if _, err := conn.CreatePayment(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		ours := <-got
		if _, err := conn.client.V1PaymentIntents.Create(t.Context(), ref); err != nil {
			t.Fatal(err)
		}
		theirs := <-got
		if ours.body != theirs.body || !reflect.DeepEqual(ours.header, theirs.header) {
			t.Errorf("%s, token %q, capture %v:\n createIntent %s %v\n stripe-go    %s %v", req.Method,
				req.PaymentMethodToken, req.Capture, ours.body, ours.header, theirs.body, theirs.header)
		}
	}
	if shapes != 12 {
		t.Errorf("%d shapes of create sent, want 12", shapes)
	}
}

// BenchmarkCreateForm is what a create's form costs: written by createForm,
// against stripe-go's encoding of the same parameters as its backend's
// Call makes it (form.AppendTo, then Encode). Each includes building what
// it encodes from the request.
func BenchmarkCreateForm(b *testing.B) {
	req := processor.CreatePaymentRequest{IdempotencyKey: "cmpay_op_01KBXYZ0123456789ABCDEFGHJ",
		PaymentID: "pay_01KBXYZ0123456789ABCDEFGHJ", AmountMinor: 1050, Currency: "BRL",
		Method: processor.MethodCreditCard, PaymentMethodToken: "pm_card_visa", Capture: true}
	b.Run("createForm", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := createForm(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stripe-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v form.Values
			form.AppendTo(&v, stripeGoParams(req))
			_ = []byte(v.Encode())
		}
	})
}
