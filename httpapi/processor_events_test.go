package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
	"github.com/cmpay/cmpay/processor/stripe"
)

// POST /processor/stripe/events: 404 without a webhook secret; with one,
// 400 for a body that does not verify (nothing stored) and 200 for one
// that does, again 200 when it comes twice (stored once).
func TestProcessorEventsRoute(t *testing.T) {
	t.Parallel()
	const secret = "whsec_route_test"
	body := fmt.Sprintf(`{"id":"evt_route_1","object":"event","created":%d,"type":"payment_intent.succeeded",`+
		`"data":{"object":{"id":"pi_route_1","object":"payment_intent","amount":1050,"currency":"brl","status":"succeeded",`+
		`"metadata":{"cmpay_payment_id":"pay_route_1"}}}}`, time.Now().Unix())

	off := setup(t, dbtest.SQLite(t))
	if res, _ := off.raw(t, "POST", "/processor/stripe/events", nil, body); res.StatusCode != http.StatusNotFound {
		t.Errorf("without a secret: %d, want 404", res.StatusCode)
	}

	db := dbtest.SQLite(t)
	in, err := intake.New(db.Gorm, intake.Options{Processor: "stripe",
		Verify: func(p []byte, sig string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(p, sig, secret, now)
		},
		Decode: stripe.DecodeEvent})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.ProcessorEvents = in })
	signed := func(s string) http.Header {
		return http.Header{"Stripe-Signature": {stripedouble.Sign([]byte(body), time.Now(), s)}, "Content-Type": {"application/json"}}
	}
	for _, bad := range []http.Header{nil, signed("whsec_someone_else")} {
		if res, out := b.raw(t, "POST", "/processor/stripe/events", bad, body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("a body that does not verify: %d %s, want 400", res.StatusCode, out)
		}
	}
	if got, _ := in.EventsOf(t.Context(), "pi_route_1"); len(got) != 0 {
		t.Fatalf("refused events were stored: %+v", got)
	}
	for range 2 {
		if res, out := b.raw(t, "POST", "/processor/stripe/events", signed(secret), body); res.StatusCode != http.StatusOK {
			t.Fatalf("a signed event: %d %s, want 200", res.StatusCode, out)
		}
	}
	if got, err := in.EventsOf(t.Context(), "pi_route_1"); err != nil || len(got) != 1 || got[0].ID != "evt_route_1" {
		t.Errorf("stored: %+v, %v; want evt_route_1 once", got, err)
	}
}

// POST /sandbox/payments/{id}/pay: with the sandbox leaving Pix pending,
// it pays one (200, CAPTURED), then refuses to pay it again (409); with
// another processor the route is not there.
func TestSandboxPayRoute(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods = processor.SandboxAsync
	svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.Service, d.Sandbox = svc, true })
	res, body := b.raw(t, "POST", "/api/payments", restHeaders("pix-pay-1"), `{"clientId":"shop-7","amount":"12.30","currency":"BRL","method":"PIX"}`)
	var created struct{ ID, Status string }
	if err := json.Unmarshal(body, &created); err != nil || res.StatusCode != http.StatusCreated || created.Status != "PENDING" {
		t.Fatalf("create: %d %s", res.StatusCode, body)
	}
	pay := "/sandbox/payments/" + created.ID + "/pay"
	auth := http.Header{"Authorization": {"Bearer " + token}}
	res, body = b.raw(t, "POST", pay, auth, "")
	var paid struct{ Status, CapturedAmount string }
	if err := json.Unmarshal(body, &paid); err != nil || res.StatusCode != http.StatusOK || paid.Status != "CAPTURED" || paid.CapturedAmount != "12.30" {
		t.Fatalf("pay: %d %s", res.StatusCode, body)
	}
	if res, body = b.raw(t, "POST", pay, auth, ""); res.StatusCode != http.StatusConflict {
		t.Errorf("paying again: %d %s, want 409", res.StatusCode, body)
	}
	if res, _ = b.raw(t, "POST", pay, nil, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", res.StatusCode)
	}
	other := setup(t, dbtest.SQLite(t))
	if res, _ = other.raw(t, "POST", pay, auth, ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("without the sandbox: %d, want 404", res.StatusCode)
	}
}
