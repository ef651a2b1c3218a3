package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/webhooks"
)

// The Webhooks page keeps its filter in the form, pages with Older and
// Newer links that keep it, names each endpoint's deliveries by a link,
// and says plainly when only the newest endpoints are listed.
func TestWebhooksPageFilterAndPager(t *testing.T) {
	t.Parallel()
	form := deliveryForm{Status: "FAILED", Payment: "pay_7", After: "ZDE6OTk"}
	v := webhooksView{Available: true, Form: form, MoreEndpoints: true, Now: created, CanResend: true,
		Endpoints:  []models.WebhookEndpoint{{ID: "we_1", URL: "https://shop.test/h", CreatedAt: created}},
		Deliveries: []webhooks.Delivery{{WebhookDelivery: models.WebhookDelivery{ID: 9, Status: "FAILED"}, URL: "https://shop.test/h"}},
		OlderURL:   form.url("ZDE6OQ", ""), NewerURL: form.url("", "ZDE6OQ")}
	doc := renderDoc(t, webhooksPage(v))
	search := doc.Find(`form[role="search"][method="get"][action="/admin/webhooks"]`)
	if got, _ := search.Find(`select[name="status"] option[selected]`).Attr("value"); got != "FAILED" {
		t.Errorf("status selected %q", got)
	}
	if got, _ := search.Find(`input[name="payment"]`).Attr("value"); got != "pay_7" {
		t.Errorf("payment input %q", got)
	}
	for rel, before := range map[string]bool{"next": false, "prev": true} {
		href, _ := doc.Find(`nav.pager a[rel="` + rel + `"]`).Attr("href")
		u, err := url.Parse(href)
		q := u.Query()
		if err != nil || u.Path != "/admin/webhooks" || q.Get("status") != "FAILED" || q.Get("payment") != "pay_7" ||
			(q.Get("before") != "") != before || (q.Get("after") != "") == before {
			t.Errorf("%s link %q", rel, href)
		}
	}
	if href, _ := doc.Find(`table.endpoints a[href]`).Attr("href"); href != "/admin/webhooks?endpoint=we_1" {
		t.Errorf("endpoint link %q", href)
	}
	if action, _ := doc.Find(`table.deliveries form[method="post"]`).Attr("action"); action !=
		"/admin/webhooks/deliveries/9/resend?after=ZDE6OTk&payment=pay_7&status=FAILED" {
		t.Errorf("resend action %q", action)
	}
	if note := squash(doc.Find("p.more-endpoints").Text()); !strings.HasPrefix(note, "Showing the newest 200 endpoints only") {
		t.Errorf("endpoints note %q", note)
	}
	if caption := squash(doc.Find("table.deliveries caption").Text()); caption != "Deliveries matching the filters, newest first" {
		t.Errorf("caption %q", caption)
	}

	// A viewer, whom the resend route refuses, gets no Resend button.
	v.CanResend = false
	if n := renderDoc(t, webhooksPage(v)).Find(`table.deliveries form[method="post"]`).Length(); n != 0 {
		t.Errorf("a viewer's page has %d resend forms, want none", n)
	}

	// The newest page, unfiltered: no Newer link, no note, no banner.
	doc = renderDoc(t, webhooksPage(webhooksView{Available: true, Now: created}))
	if doc.Find(`nav.pager a`).Length() != 0 || doc.Find("p.more-endpoints, p.error").Length() != 0 {
		t.Errorf("newest page: pager %q", squash(doc.Find("nav.pager").Text()))
	}
	doc = renderDoc(t, webhooksPage(webhooksView{Available: true, Now: created, Form: deliveryForm{Status: "nope"},
		Error: "status must be one of PENDING, DELIVERED, FAILED, CANCELED"}))
	if got := squash(doc.Find(`p.error[role="alert"]`).Text()); !strings.HasPrefix(got, "status must be one of") ||
		strings.Contains(doc.Text(), "No delivery") {
		t.Errorf("banner %q", got)
	}
}

// TestDeliveryFormKeepsClientSpaces: the client filter is taken as it is,
// spaces included (a client id may have them), and survives the page's
// links; the ids CMPay makes are trimmed.
func TestDeliveryFormKeepsClientSpaces(t *testing.T) {
	t.Parallel()
	q := url.Values{"client": {" +shop "}, "payment": {" pay_1 "}}
	f, err := parseDeliveryForm(q)
	if err != nil || f.Client != " +shop " || f.Payment != "pay_1" {
		t.Fatalf("parseDeliveryForm(%v) = %+v, %v", q, f, err)
	}
	u, err := url.Parse(f.url("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if back, err := parseDeliveryForm(u.Query()); err != nil || back != f {
		t.Errorf("round trip of %s: %+v, %v; want %+v", u, back, err, f)
	}
}

// TestResendNoticeOnlyWhenTrue: the notice after a resend is shown only
// for a delivery no longer FAILED; a crafted ?unchanged= of a FAILED one
// said it "was not failed any more".
func TestResendNoticeOnlyWhenTrue(t *testing.T) {
	t.Parallel()
	a := &admin{}
	for _, c := range []struct {
		query, status string
		want          bool
	}{
		{"resent=9", "PENDING", true}, {"unchanged=9", "DELIVERED", true},
		{"resent=9", "FAILED", false}, {"unchanged=9", "FAILED", false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/admin/webhooks?"+c.query, nil)
		listed := []webhooks.Delivery{{WebhookDelivery: models.WebhookDelivery{ID: 9, Status: c.status}}}
		if got := a.resendNotice(r, listed); (got != "") != c.want {
			t.Errorf("%s of a %s delivery: notice %q", c.query, c.status, got)
		}
	}
}
