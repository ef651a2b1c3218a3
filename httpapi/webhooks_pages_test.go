package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/webhooks"
)

// deliveryRows are the ids of the deliveries a Webhooks page lists, in
// order.
func deliveryRows(t *testing.T, doc *goquery.Document) []int64 {
	t.Helper()
	var ids []int64
	doc.Find(`table.deliveries tbody td[data-label="Delivery"]`).Each(func(_ int, s *goquery.Selection) {
		id, err := strconv.ParseInt(strings.TrimSpace(s.Text()), 10, 64)
		if err != nil {
			t.Fatalf("delivery cell %q", s.Text())
		}
		ids = append(ids, id)
	})
	return ids
}

// TestWebhooksPageReachesEveryDelivery: with more deliveries than a page,
// the Older links walk every one once; a failed delivery far down is
// found by the status filter and by its payment's link
// (/admin/webhooks?payment=…), resent from there, and the page comes
// back filtered as it was, saying so; a bad filter or a forged cursor is
// the page's error banner (400), never a 500 nor ignored.
func TestWebhooksPageReachesEveryDelivery(t *testing.T) {
	t.Parallel()
	b, total, failed := manyDeliveries(t)
	admin := b.asAdmin(t)
	t.Run("the Older links walk every delivery once", func(t *testing.T) {
		// The newest page does not reach the failed one; the Older links
		// do, each delivery once.
		_, doc := admin.get(t, "/admin/webhooks")
		if got := deliveryRows(t, doc); len(got) != 50 || slices.Contains(got, failed) || doc.Find(`a[rel="prev"]`).Length() != 0 {
			t.Fatalf("newest page: %v", got)
		}
		var seen []int64
		for path := "/admin/webhooks"; path != ""; {
			res, doc := admin.get(t, path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, res.StatusCode)
			}
			seen = append(seen, deliveryRows(t, doc)...)
			path, _ = doc.Find(`a[rel="next"]`).Attr("href")
			if len(seen) > total {
				break
			}
		}
		if len(seen) != total || !slices.IsSortedFunc(seen, func(a, b int64) int { return int(b - a) }) || !slices.Contains(seen, failed) {
			t.Errorf("walked %d deliveries (%v), want %d, newest first, each once", len(seen), seen, total)
		}
	})
	t.Run("a failed delivery found, resent, the filter kept", func(t *testing.T) { resendFoundDelivery(t, admin, failed) })
	t.Run("a bad filter or a forged cursor is a 400 banner", func(t *testing.T) {
		for _, q := range []string{"status=failed", "status=FAILED&status=PENDING", "after=forged", "before=ZDE6MDE",
			"payment=" + url.QueryEscape("pay_\x00"), "client=" + strings.Repeat("c", 101), "after=ZDE6Mw&before=ZDE6Mw"} {
			res, doc := admin.get(t, "/admin/webhooks?"+q)
			banner := strings.TrimSpace(doc.Find(`p.error[role="alert"]`).Text())
			if res.StatusCode != http.StatusBadRequest || banner == "" || len(deliveryRows(t, doc)) != 0 {
				t.Errorf("GET ?%s: %d, banner %q", q, res.StatusCode, banner)
			}
		}
	})
}

// manyDeliveries stores 130 deliveries to one endpoint, of ten payments'
// events, all DELIVERED but the third oldest (pay_3's), FAILED. It returns
// a surface whose Webhooks page reads them, their number, and the failed
// one's id.
func manyDeliveries(t *testing.T) (b *bundle, total int, failed int64) {
	db := dbtest.SQLite(t)
	// No events service runs: the page only reads, and no sequencer adds
	// deliveries to what the test stores.
	wh, err := webhooks.New(db.Gorm, nil, webhooks.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b = setup(t, db, func(d *httpapi.Deps) { d.Webhooks = wh })
	at := time.Now().UTC().Add(-80 * time.Hour).Truncate(time.Microsecond)
	if err := b.db.Gorm.Create(&models.WebhookEndpoint{ID: "we_shop", URL: "https://shop.example/hooks", Secret: "s",
		CreatedAt: at}).Error; err != nil {
		t.Fatal(err)
	}
	var evs []models.PaymentEvent
	for seq := int64(1); seq <= 10; seq++ {
		evs = append(evs, models.PaymentEvent{Seq: seq, Type: "PAYMENT_CREATED", At: at, PaymentID: fmt.Sprintf("pay_%d", seq),
			ClientID: "shop"})
	}
	if err := b.db.Gorm.Create(&evs).Error; err != nil {
		t.Fatal(err)
	}
	rows := make([]models.WebhookDelivery, 130)
	for i := range rows {
		seq := int64(i%10 + 1)
		// With their event's payment and client, as the pass that makes
		// deliveries writes them.
		rows[i] = models.WebhookDelivery{EventID: seq, EventSeq: seq, EndpointID: "we_shop", EventPaymentID: fmt.Sprintf("pay_%d", seq),
			EventClientID: "shop", Status: "DELIVERED", EventAt: at, CreatedAt: at, NextAttemptAt: at}
	}
	rows[2].Status = "FAILED" // the third oldest: pay_3's
	if err := b.db.Gorm.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return b, len(rows), rows[2].ID
}

// resendFoundDelivery: by status, and by the payment's link, the failed
// delivery is on the first page, with its Resend; resent, the page comes
// back filtered as it was, saying so.
func resendFoundDelivery(t *testing.T, admin *staffClient, failed int64) {
	action := ""
	for _, path := range []string{"/admin/webhooks?status=FAILED", "/admin/webhooks?payment=pay_3"} {
		_, doc := admin.get(t, path)
		got := deliveryRows(t, doc)
		if path == "/admin/webhooks?status=FAILED" && !slices.Equal(got, []int64{failed}) || !slices.Contains(got, failed) {
			t.Errorf("GET %s lists %v, want %d", path, got, failed)
		}
		if path == "/admin/webhooks?payment=pay_3" {
			if v, _ := doc.Find(`form[role="search"] input[name="payment"]`).Attr("value"); v != "pay_3" || len(got) != 13 {
				t.Errorf("payment filter: %d rows, input %q", len(got), v)
			}
			continue
		}
		action, _ = doc.Find(`form[method="post"][action*="/resend"]`).Attr("action")
	}
	if want := fmt.Sprintf("/admin/webhooks/deliveries/%d/resend?status=FAILED", failed); action != want {
		t.Fatalf("resend form posts to %q, want %q", action, want)
	}
	res, _ := admin.post(t, action, url.Values{})
	back := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || back != fmt.Sprintf("/admin/webhooks?resent=%d&status=FAILED", failed) {
		t.Fatalf("resend: %d to %q", res.StatusCode, back)
	}
	// Re-armed, it is no longer FAILED: the filtered page lists nothing,
	// and still says what was done.
	_, doc := admin.get(t, back)
	notice := strings.TrimSpace(doc.Find(`[role="status"]`).Text())
	if !strings.HasPrefix(notice, fmt.Sprintf("Delivery %d was re-armed", failed)) || len(deliveryRows(t, doc)) != 0 {
		t.Errorf("after the resend: notice %q, rows %v", notice, deliveryRows(t, doc))
	}
}
