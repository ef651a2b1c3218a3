package integration_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// A create whose request Stripe answered with a stored 500 is sent again
// under _a2 by the server's recovery and settled; Stripe then rolls the
// first request forward, charging a second time, and posts its event
// twice to POST /processor/stripe/events. The server records the second
// charge once and counts it once in cmpay_processor_duplicates_total,
// and the payment stays CAPTURED on _a2's intent. Both databases.
func TestStripeRolledForwardCreateIsRecorded(t *testing.T) {
	t.Parallel()
	const secret = "whsec_rolled_forward"
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			double := stripedouble.New(stripedouble.Options{})
			t.Cleanup(double.Close)
			srv, db := startOnEmpty(t, dialect, "PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_rolled",
				"STRIPE_API_BASE="+double.URL(), "STRIPE_WEBHOOK_SECRET="+secret, "PROCESSOR_TIMEOUT=1s",
				"PROCESSOR_RECOVERY_AFTER=500ms", "STRIPE_SEARCH_LAG=100ms")
			double.FailNext(stripedouble.CreatePaymentIntent, stripedouble.Fault{Kind: stripedouble.ServerErrorStored})
			var out struct {
				CreatePayment struct{ Payment struct{ ID, Status string } }
			}
			if err := gqlData(srv.url, `mutation { createPayment(input: {clientId: "rf", amount: "100.00", currency: "BRL",
				method: CREDIT_CARD, paymentMethodToken: "pm_card_visa"}, idempotencyKey: "rolled-1") { payment { id status } } }`,
				nil, &out); err != nil {
				t.Fatal(err)
			}
			id := out.CreatePayment.Payment.ID
			if out.CreatePayment.Payment.Status != "PROCESSING" {
				t.Fatalf("first answer %+v, want PROCESSING", out)
			}
			var status, ref string
			read := func() {
				row := db.Gorm.Raw(`SELECT status, COALESCE(processor_reference, '') FROM payments WHERE id = ?`, id).Row()
				if err := row.Scan(&status, &ref); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "recovery to send the create again and settle it", 30*time.Second, 50*time.Millisecond, func() bool {
				read()
				return status == "CAPTURED"
			})
			keys := double.Keys(stripedouble.CreatePaymentIntent)
			if len(keys) != 2 || keys[1] != keys[0]+"_a2" {
				t.Fatalf("create keys %q, want the first and its _a2", keys)
			}
			settledOn := ref
			stray, err := double.RollForward(keys[0])
			if err != nil {
				t.Fatal(err)
			}
			statuses, err := double.Deliver(t.Context(), srv.url+"/processor/stripe/events", secret,
				double.EventsFor(stray), stripedouble.Delivery{Copies: 2})
			if err != nil || len(statuses) != 2 || statuses[0] != 200 || statuses[1] != 200 {
				t.Fatalf("event posts: %v, %v; want two 200s", statuses, err)
			}
			var rows int64
			waitUntil(t, "the duplicate recorded", 10*time.Second, 20*time.Millisecond, func() bool {
				db.Gorm.Raw(`SELECT count(*) FROM processor_duplicates WHERE payment_id = ? AND reference = ?`, id, stray).Scan(&rows)
				return rows == 1
			})
			if metrics := readMetrics(t, srv.url); !strings.Contains(metrics,
				`cmpay_processor_duplicates_total{operation="CREATE_PAYMENT"} 1`+"\n") {
				t.Errorf("the metric does not count one duplicate:\n%s", grepLines(metrics, "cmpay_processor_duplicates_total"))
			}
			read()
			if status != "CAPTURED" || ref != settledOn || ref == stray {
				t.Errorf("after the duplicate: %s on %s, want CAPTURED on %s", status, ref, settledOn)
			}
		})
	}
}

// readMetrics is the server's /metrics, read as its staff account.
func readMetrics(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	req.SetBasicAuth("admin", "unused")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", res.StatusCode, err)
	}
	return string(body)
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
