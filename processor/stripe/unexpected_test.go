package stripe

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
)

// withoutIntents is the URL of a proxy to the double that drops the
// payment_intent from every error it answers: Stripe's refusal without
// the intent it names.
func withoutIntents(t *testing.T, d *stripedouble.Double) string {
	t.Helper()
	target, err := url.Parse(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode < 400 {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		var m map[string]map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil && m["error"] != nil {
			delete(m["error"], "payment_intent")
			body, _ = json.Marshal(m)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// connTo is a connector to base.
func connTo(t *testing.T, base string) *Connector {
	t.Helper()
	cfg := processor.DefaultConfig()
	cfg.Processor, cfg.StripeAPIKey, cfg.StripeAPIBase, cfg.Timeout = "stripe", "sk_test_double", base, 5*time.Second
	conn, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.CloseIdleConnections)
	return conn
}

// A capture or cancel Stripe refuses with payment_intent_unexpected_state,
// because the intent was captured or canceled by another party, answers
// the intent's state, with what was captured: from the intent the refusal
// carries, or, when it carries none, from a read of it. A read that fails
// leaves the outcome unknown, never a refusal.
func TestUnexpectedStateAnswersTheIntentsState(t *testing.T) {
	conn, d, _ := setup(t, stripedouble.Options{})
	bare := connTo(t, withoutIntents(t, d))
	ctx := context.Background()
	n := 0
	authorized := func(t *testing.T) string {
		t.Helper()
		n++
		p, err := conn.CreatePayment(ctx, cardReq("cmpay_create_"+strconv.Itoa(n), "pay_"+strconv.Itoa(n), "pm_card_visa", false))
		if err != nil || p.State != processor.PaymentAuthorized {
			t.Fatalf("create: %+v %v", p, err)
		}
		return p.Reference
	}
	for name, c := range map[string]*Connector{"carried": conn, "read": bare} {
		t.Run(name, func(t *testing.T) {
			reads := d.Calls(stripedouble.GetPaymentIntent)
			wantReads := reads
			if name == "read" {
				wantReads += 3
			}
			captured := authorized(t)
			if err := d.CaptureFromDashboard(captured, 400); err != nil {
				t.Fatal(err)
			}
			got, err := c.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_capture_" + name, Reference: captured,
				AmountMinor: 1050, Currency: "BRL"})
			if err != nil || got.State != processor.PaymentCaptured || got.CapturedMinor != 400 {
				t.Errorf("capture of an intent captured for 4.00: %+v %v", got, err)
			}
			got, err = c.CancelPayment(ctx, processor.CancelRequest{IdempotencyKey: "cmpay_cancel_" + name, Reference: captured})
			if err != nil || got.State != processor.PaymentCaptured {
				t.Errorf("cancel of a captured intent: %+v %v", got, err)
			}
			canceled := authorized(t)
			if err := d.ExpireAuthorization(canceled); err != nil {
				t.Fatal(err)
			}
			got, err = c.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_capture2_" + name, Reference: canceled,
				AmountMinor: 1050, Currency: "BRL"})
			if err != nil || got.State != processor.PaymentCanceled {
				t.Errorf("capture of a canceled intent: %+v %v", got, err)
			}
			if r := d.Calls(stripedouble.GetPaymentIntent); r != wantReads {
				t.Errorf("%d reads, want %d", r-reads, wantReads-reads)
			}
		})
	}
	t.Run("read fails", func(t *testing.T) {
		ref := authorized(t)
		if err := d.ExpireAuthorization(ref); err != nil {
			t.Fatal(err)
		}
		d.FailNext(stripedouble.GetPaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorBefore})
		got, err := bare.CapturePayment(ctx, processor.CaptureRequest{IdempotencyKey: "cmpay_capture_fails", Reference: ref,
			AmountMinor: 1050, Currency: "BRL"})
		if !unknown(err) {
			t.Errorf("capture whose read failed: %+v %v, want an unknown outcome", got, err)
		}
	})
}
