package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/stripe"
)

// Two Authorization headers are refused on every route, whatever their
// order, those that take no credentials included: a proxy in front may
// read either. Stripe's events come with none, so a signed event that
// carries two is refused too, and stored only when sent without them.
func TestTwoAuthorizationHeadersOnEveryRoute(t *testing.T) {
	t.Parallel()
	const secret = "whsec_two_authorizations"
	db := dbtest.SQLite(t)
	in, err := intake.New(db.Gorm, intake.Options{Processor: "stripe", Decode: stripe.DecodeEvent,
		Verify: func(p []byte, sig string, now time.Time) (processor.Event, error) {
			return stripe.VerifyEvent(p, sig, secret, now)
		}})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.ProcessorEvents, d.Sandbox = in, true })
	event := fmt.Sprintf(`{"id":"evt_two_1","object":"event","created":%d,"type":"payment_intent.succeeded",`+
		`"data":{"object":{"id":"pi_two_1","object":"payment_intent","amount":1050,"currency":"brl","status":"succeeded",`+
		`"metadata":{"cmpay_payment_id":"pay_two_1"}}}}`, time.Now().Unix())
	send := func(method, path, body string, header http.Header) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = "203.0.113.31:4242"
		for k, vs := range header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		return rec.Code
	}
	routes := []struct {
		method, path, body string
		header             http.Header
	}{
		{"GET", "/healthz", "", nil},
		{"GET", "/api/openapi.json", "", nil},
		{"GET", "/playground", "", nil},
		{"GET", "/favicon.ico", "", nil},
		{"GET", "/admin/login", "", nil},
		{"POST", "/admin/login", "username=admin&password=" + adminPassword,
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://example.com"}}},
		{"GET", "/no/such/path", "", nil},
		{"POST", "/graphql", `{"query":"{ __typename }"}`, http.Header{"Content-Type": {"application/json"}}},
		{"POST", "/sandbox/payments/pay_x/pay", "", nil},
		{"POST", "/processor/stripe/events", event, http.Header{"Content-Type": {"application/json"},
			"Stripe-Signature": {stripedouble.Sign([]byte(event), time.Now(), secret)}}},
	}
	for _, rt := range routes {
		for _, order := range [][]string{{"Bearer wrong", "Bearer " + token}, {"Bearer " + token, "Bearer " + token}} {
			h := http.Header{"Authorization": order}
			for k, vs := range rt.header {
				h[k] = vs
			}
			if code := send(rt.method, rt.path, rt.body, h); code != http.StatusBadRequest && code != http.StatusUnauthorized {
				t.Errorf("%s %s with Authorization %q: %d, want 400 or 401", rt.method, rt.path, order, code)
			}
		}
	}
	if got, _ := in.EventsOf(t.Context(), "pi_two_1"); len(got) != 0 {
		t.Errorf("an event sent with two Authorization headers was stored: %+v", got)
	}
	last := routes[len(routes)-1]
	if code := send(last.method, last.path, last.body, last.header); code != http.StatusOK {
		t.Errorf("the same event without Authorization: %d, want 200", code)
	}
}
