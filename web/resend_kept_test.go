package web

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/deliverytest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// TestAdminResendsWeekOldFailedDelivery: a delivery that failed, kept past
// the retention while its event is swept, is what support finds on the
// Webhooks page days later. The page shows its event's type (read from the
// body it sent), endpoint, payment and FAILED status, with Resend for an
// operator only; the operator's Resend, through the real sign-in, form and
// redirect, sends the first attempt's very bytes signed afresh, and the
// delivery ends DELIVERED; a second Resend changes and sends nothing.
func TestAdminResendsWeekOldFailedDelivery(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newResendEnv(t, db)
		pay := e.Create(t, "shop-keep", "keep-admin-1")
		d, first := e.failedWithItsBody(t, pay)
		// The newest event, which no sweep takes, in a pass of its own and
		// for a client without endpoints.
		e.Create(t, "shop-other", "keep-admin-2")
		e.waitEvents(t, 2)

		// 100 h on: past the retention (73 h), within the keep (168 h).
		e.Sweep(t, 100*time.Hour)
		if left := e.eventPayments(t); slices.Contains(left, pay) {
			t.Fatalf("the event of %s is kept after 100 h (events of %v): the test needs it gone", pay, left)
		}

		e.serveAdmin(t)
		viewer := e.signIn(t, "vera", staff.Viewer)
		operator := e.signIn(t, "otto", staff.Operator)
		e.viewerMayNotResend(t, viewer, d, pay)
		e.operatorIsOfferedResend(t, operator, d, pay)

		// The endpoint is fixed; support resends.
		e.Receiver.Failing.Store(false)
		before := len(e.Receiver.Sent())
		resentAt := time.Now()
		doc := e.postResend(t, operator, d.ID, "resent", "resend")
		checkNotice(t, doc, "the resend", "Delivery "+strconv.FormatInt(d.ID, 10)+" was re-armed")
		e.waitDelivery(t, pay, "DELIVERED")
		resent := e.lastSent(t, before+1, "after the resend")
		if string(resent.Body) != string(first.Body) {
			t.Errorf("the resend sent another body than the first attempt:\nfirst  %s\nresent %s", first.Body, resent.Body)
		}
		if resent.EventID != strconv.FormatInt(d.EventID, 10) {
			t.Errorf("resent with event id %q, want %d", resent.EventID, d.EventID)
		}
		e.checkSignedAfresh(t, resent, resentAt)

		e.resendAgainChangesNothing(t, operator, d.ID, before+1)
	})
}

// failedWithItsBody waits for the payment's delivery to fail, and returns
// it with the request its first attempt sent, whose body it must store.
func (e *resendEnv) failedWithItsBody(t *testing.T, pay string) (models.WebhookDelivery, deliverytest.Received) {
	t.Helper()
	d := e.waitDelivery(t, pay, "FAILED")
	if d.Body == nil {
		t.Fatalf("delivery %d is FAILED without its body stored", d.ID)
	}
	first := e.Receiver.Sent()
	if len(first) == 0 || string(first[0].Body) != *d.Body {
		t.Fatalf("the stored body is not the one sent: %d sent, stored %q", len(first), *d.Body)
	}
	return d, first[0]
}

// viewerMayNotResend: the viewer sees the row of the failed delivery d
// of payment pay, with no Resend, and may not post one.
func (e *resendEnv) viewerMayNotResend(t *testing.T, viewer *http.Client, d models.WebhookDelivery, pay string) {
	t.Helper()
	row := failedRow(t, getDoc(t, viewer, e.site+failedPage), d.ID)
	checkFailedRow(t, row, d, pay, e.hook)
	if row.Find(`form[method="post"]`).Length() != 0 {
		t.Error("a viewer is offered Resend")
	}
	if res := postForm(t, viewer, e.site+resendAction(d.ID)); res.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's resend: %d, want 403", res.StatusCode)
	}
	if got := e.delivery(t, d.ID); got.Status != "FAILED" {
		t.Fatalf("after a viewer's refused resend the delivery is %s", got.Status)
	}
}

// operatorIsOfferedResend: the operator sees the same row, with Resend.
func (e *resendEnv) operatorIsOfferedResend(t *testing.T, operator *http.Client, d models.WebhookDelivery, pay string) {
	t.Helper()
	row := failedRow(t, getDoc(t, operator, e.site+failedPage), d.ID)
	checkFailedRow(t, row, d, pay, e.hook)
	if got, _ := row.Find(`form[method="post"]`).Attr("action"); got != resendAction(d.ID) {
		t.Fatalf("operator's Resend form posts to %q, want %q", got, resendAction(d.ID))
	}
}

// resendAgainChangesNothing: a second Resend of the delivery id, already
// delivered, changes nothing and sends nothing: sent requests stay sent.
func (e *resendEnv) resendAgainChangesNothing(t *testing.T, operator *http.Client, id int64, sent int) {
	t.Helper()
	done := e.delivery(t, id)
	doc := e.postResend(t, operator, id, "unchanged", "second resend")
	checkNotice(t, doc, "the second resend", "Delivery "+strconv.FormatInt(id, 10)+" was not failed any more")
	if after := e.delivery(t, id); after.Status != "DELIVERED" || after.Attempts != done.Attempts {
		t.Errorf("after the second resend: %s with %d attempts, want DELIVERED with %d", after.Status, after.Attempts, done.Attempts)
	}
	if n := len(e.Receiver.Sent()); n != sent {
		t.Errorf("%d sent after the second resend, want %d", n, sent)
	}
}

// TestAdminResendsDeliveryFailedBeforeBodies: deliveries that failed
// before failed deliveries kept their body (body NULL: a database upgraded
// from before migration 0012). One whose event the sweep kept for it is
// resent from that event: its first attempt's bytes, signed afresh. One
// whose event is gone has nothing to send: the page offers no Resend and
// says why, and a Resend posted all the same changes and sends nothing,
// and says why too.
func TestAdminResendsDeliveryFailedBeforeBodies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		e := newResendEnv(t, db)
		kept, dk, dg := e.failedBeforeBodies(t)
		e.serveAdmin(t)
		operator := e.signIn(t, "otto", staff.Operator)
		e.resendOfferedOnlyWithSomethingToSend(t, operator, dk.ID, dg.ID)

		// A Resend posted all the same changes and sends nothing.
		e.Receiver.Failing.Store(false)
		before := len(e.Receiver.Sent())
		doc := e.postResend(t, operator, dg.ID, "unsendable", "resend of the delivery with nothing to send")
		checkNotice(t, doc, "the refused resend",
			"Delivery "+strconv.FormatInt(dg.ID, 10)+" was not resent: it failed before CMPay kept")
		if got := e.delivery(t, dg.ID); got.Status != "FAILED" || got.Attempts != dg.Attempts || got.ExpiresAt != nil {
			t.Errorf("after the refused resend: %s, %d attempts, expires %v; want it FAILED as it was (%d attempts)",
				got.Status, got.Attempts, got.ExpiresAt, dg.Attempts)
		}

		// The one whose event is kept is resent from it.
		resentAt := time.Now()
		e.postResend(t, operator, dk.ID, "resent", "resend of the delivery whose event is kept")
		e.waitDelivery(t, kept, "DELIVERED")
		first, resent := e.Receiver.Of(dk.EventID)[0], e.lastSent(t, before+1, "after both resends")
		if resent.EventID != strconv.FormatInt(dk.EventID, 10) || string(resent.Body) != string(first.Body) {
			t.Errorf("the resend sent event %s's body %s, want event %d's first %s", resent.EventID, resent.Body,
				dk.EventID, first.Body)
		}
		e.checkSignedAfresh(t, resent, resentAt)
		if got := e.delivery(t, dg.ID); got.Status != "FAILED" || got.Attempts != dg.Attempts {
			t.Errorf("the delivery with nothing to send is %s with %d attempts after the other's resend", got.Status, got.Attempts)
		}

		// Both resends are in the audit log, the refused one as failed.
		e.checkResendsAudited(t, "otto delivery "+strconv.FormatInt(dk.ID, 10)+" ok",
			"otto delivery "+strconv.FormatInt(dg.ID, 10)+" failed")
	})
}

// failedBeforeBodies makes two deliveries that failed before failed
// deliveries kept their body, each of a payment whose event is in a pass
// of its own (the sweep keeps or takes a pass whole on PostgreSQL), and
// sweeps 100 h on. It returns the payment of the first and both
// deliveries: the first's event is kept for it, the second's is gone.
func (e *resendEnv) failedBeforeBodies(t *testing.T) (kept string, dk, dg models.WebhookDelivery) {
	t.Helper()
	kept = e.Create(t, "shop-keep", "old-kept")
	dk = e.waitDelivery(t, kept, "FAILED")
	e.forgetBody(t, dk.ID)
	gone := e.Create(t, "shop-keep", "old-gone")
	dg = e.waitDelivery(t, gone, "FAILED")
	e.Create(t, "shop-other", "old-newest")
	e.waitEvents(t, 3)

	// 100 h on: the event of the delivery without a body is kept, the
	// other's goes. Without its body too, that one is what an older
	// build's sweep could leave: a FAILED delivery with nothing to send.
	e.Sweep(t, 100*time.Hour)
	if left := e.eventPayments(t); !slices.Contains(left, kept) || slices.Contains(left, gone) {
		t.Fatalf("events of %v left after 100 h: want %s's, not %s's", left, kept, gone)
	}
	e.forgetBody(t, dg.ID)
	return kept, dk, dg
}

// resendOfferedOnlyWithSomethingToSend: on the operator's page, the
// delivery kept whose event is kept has Resend; the one with nothing to
// send has none, and says why in its place.
func (e *resendEnv) resendOfferedOnlyWithSomethingToSend(t *testing.T, operator *http.Client, kept, gone int64) {
	t.Helper()
	doc := getDoc(t, operator, e.site+failedPage)
	if got, _ := failedRow(t, doc, kept).Find(`form[method="post"]`).Attr("action"); got != resendAction(kept) {
		t.Errorf("the delivery whose event is kept: Resend posts to %q, want %q", got, resendAction(kept))
	}
	row := failedRow(t, doc, gone)
	if row.Find(`form[method="post"]`).Length() != 0 {
		t.Error("the delivery with nothing to send is offered Resend")
	}
	why := "Cannot be resent: it failed before CMPay kept the body of a failed delivery, and its event has been deleted since, so there is nothing to send again."
	if got := squash(row.Find(`td[data-label="Action"]`).Text()); got != why {
		t.Errorf("the action cell of the delivery with nothing to send says %q, want %q", got, why)
	}
}

// checkResendsAudited checks the resends in the audit log, newest first,
// each as "actor target outcome".
func (e *resendEnv) checkResendsAudited(t *testing.T, want ...string) {
	t.Helper()
	log, err := e.st.AuditLog(t.Context(), staff.AuditFilter{Action: staff.ActWebhookResend}, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range log.Entries {
		got = append(got, en.Actor+" "+en.Target+" "+en.Outcome)
	}
	if !slices.Equal(got, want) {
		t.Errorf("resends in the audit log, newest first: %q, want %q", got, want)
	}
}

// failedPage is the Webhooks page of the FAILED deliveries, where the
// tests' Resend forms are.
const failedPage = "/admin/webhooks?status=FAILED"

// resendAction is where the Resend form of delivery id on failedPage
// posts.
func resendAction(id int64) string {
	return "/admin/webhooks/deliveries/" + strconv.FormatInt(id, 10) + "/resend?status=FAILED"
}

// serveAdmin starts the admin over the test's services, at e.site.
func (e *resendEnv) serveAdmin(t *testing.T) {
	t.Helper()
	e.srv = httptest.NewServer(Admin(AdminDeps{Payments: e.Payments, Staff: e.st, Webhooks: e.Webhooks}))
	t.Cleanup(e.srv.Close)
	e.site = e.srv.URL
}

// signIn is a browser signed in to the admin as a new staff member.
func (e *resendEnv) signIn(t *testing.T, username string, role staff.Role) *http.Client {
	t.Helper()
	return signedIn(t, e.srv, e.st, username, role)
}

// postResend posts the Resend form of delivery id as c, and returns the
// page it is sent back to, which must be the Webhooks page whose query
// names id under param ("resent", "unchanged", "unsendable"); what names
// the resend in the failure's message.
func (e *resendEnv) postResend(t *testing.T, c *http.Client, id int64, param, what string) *goquery.Document {
	t.Helper()
	res := postForm(t, c, e.site+resendAction(id))
	doc := docOf(t, res)
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/admin/webhooks" ||
		res.Request.URL.Query().Get(param) != strconv.FormatInt(id, 10) {
		t.Fatalf("%s ended at %d %s", what, res.StatusCode, res.Request.URL)
	}
	return doc
}

// checkNotice checks that the page's notice, after what, begins with want.
func checkNotice(t *testing.T, doc *goquery.Document, after, want string) {
	t.Helper()
	if notice := squash(doc.Find(`p.notice[role="status"]`).Text()); !strings.HasPrefix(notice, want) {
		t.Errorf("notice after %s %q, want it to begin %q", after, notice, want)
	}
}

// lastSent is the last request the receiver was sent, when it was sent
// n in all; the test stops otherwise.
func (e *resendEnv) lastSent(t *testing.T, n int, after string) deliverytest.Received {
	t.Helper()
	sent := e.Receiver.Sent()
	if len(sent) != n {
		t.Fatalf("%d sent %s, want %d", len(sent), after, n)
	}
	return sent[n-1]
}

// checkSignedAfresh checks that the resent request is signed with the
// endpoint's secret, at or after resentAt, when the Resend was asked for.
func (e *resendEnv) checkSignedAfresh(t *testing.T, resent deliverytest.Received, resentAt time.Time) {
	t.Helper()
	if err := webhooks.Verify(e.secret, resent.Signature, resent.Body, time.Now(), time.Minute); err != nil {
		t.Errorf("the resend's signature %q: %v", resent.Signature, err)
	}
	if ts := signedAt(t, resent.Signature); ts < resentAt.Unix() {
		t.Errorf("the resend is signed at %d, before it was asked for (%d): not afresh", ts, resentAt.Unix())
	}
}

// checkFailedRow checks what the Webhooks page shows of the failed
// delivery d of payment pay to endpointURL.
func checkFailedRow(t *testing.T, row *goquery.Selection, d models.WebhookDelivery, pay, endpointURL string) {
	t.Helper()
	event := squash(row.Find(`td[data-label="Event"]`).Text())
	if want := "#" + strconv.FormatInt(d.EventID, 10) + " " + string(payments.EventCreated) + " payment " + pay; event != want {
		t.Errorf("event cell %q, want %q", event, want)
	}
	if href, _ := row.Find(`td[data-label="Event"] a`).Attr("href"); href != "/admin/payments/"+pay {
		t.Errorf("payment link %q", href)
	}
	if got := squash(row.Find(`td[data-label="Endpoint"]`).Text()); got != endpointURL {
		t.Errorf("endpoint cell %q, want %q", got, endpointURL)
	}
	if got := squash(row.Find(`td[data-label="Status"] .badge.rejected`).Text()); got != "FAILED" {
		t.Errorf("status badge %q, want FAILED", got)
	}
	if got := squash(row.Find(`td[data-label="Last answer"]`).Text()); !strings.HasPrefix(got, "HTTP 500") {
		t.Errorf("last answer %q, want the receiver's HTTP 500", got)
	}
	if got := squash(row.Find(`td[data-label="Next attempt"]`).Text()); got != "none" {
		t.Errorf("next attempt %q, want none", got)
	}
}

// failedRow is delivery id's row on the page; the test stops without one.
func failedRow(t *testing.T, doc *goquery.Document, id int64) *goquery.Selection {
	t.Helper()
	row := doc.Find("table.deliveries tbody tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return squash(s.Find(`td[data-label="Delivery"]`).Text()) == strconv.FormatInt(id, 10)
	})
	if row.Length() != 1 {
		t.Fatalf("%d rows of delivery %d on the page: %s", row.Length(), id, squash(doc.Find("table.deliveries").Text()))
	}
	return row
}

// resendEnv is the services of deliverytest and staff, with an endpoint
// for the client shop-keep at the receiver's /fail, which fails while
// told to.
type resendEnv struct {
	*deliverytest.Env
	st     *staff.Store
	hook   string
	secret string
	// srv is the admin, at site, once serveAdmin started it.
	srv  *httptest.Server
	site string
}

func newResendEnv(t *testing.T, db dbtest.DB) *resendEnv {
	t.Helper()
	// Retries for three seconds only, so that the delivery fails soon,
	// and a resent one is still tried on a loaded machine.
	e := &resendEnv{Env: deliverytest.New(t, db, 3*time.Second),
		st: staff.New(db.Gorm, staff.Config{Hash: staff.HashParams{Memory: 64, Time: 1, Threads: 1}})}
	t.Cleanup(e.st.Close) // its sessions' last uses are written beside the pages
	e.hook = e.Receiver.URL + "/fail"
	var err error
	if _, e.secret, err = e.Webhooks.CreateEndpoint(t.Context(), "shop-keep", e.hook, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitDelivery waits until the payment's one delivery has status.
func (e *resendEnv) waitDelivery(t *testing.T, pay, status string) models.WebhookDelivery {
	t.Helper()
	var d models.WebhookDelivery
	deliverytest.Poll(t, "the delivery of "+pay+" to be "+status, func() bool {
		var rows []models.WebhookDelivery
		if err := e.DB.Gorm.Where("payment_id = ?", pay).Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) > 1 {
			t.Fatalf("%d deliveries of %s, want one", len(rows), pay)
		}
		if len(rows) == 1 {
			d = rows[0]
		}
		return len(rows) == 1 && d.Status == status
	})
	return d
}

func (e *resendEnv) delivery(t *testing.T, id int64) models.WebhookDelivery {
	t.Helper()
	var d models.WebhookDelivery
	if err := e.DB.Gorm.First(&d, id).Error; err != nil {
		t.Fatal(err)
	}
	return d
}

// forgetBody makes the delivery id one stored before failed deliveries
// kept their body (migration 0012).
func (e *resendEnv) forgetBody(t *testing.T, id int64) {
	t.Helper()
	if err := e.DB.Gorm.Model(&models.WebhookDelivery{}).Where("id = ?", id).Update("body", nil).Error; err != nil {
		t.Fatal(err)
	}
}

// waitEvents waits until n events are numbered: the next one made will
// be in a pass of its own.
func (e *resendEnv) waitEvents(t *testing.T, n int) {
	t.Helper()
	deliverytest.Poll(t, "the events", func() bool { return len(e.EventsLeft(t)) == n })
}

// eventPayments lists the payments of the events left.
func (e *resendEnv) eventPayments(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, ev := range e.EventsLeft(t) {
		out = append(out, ev.Payment.ID)
	}
	return out
}

// signedIn is a browser signed in to srv, through the sign-in form, as a
// new staff member with role.
func signedIn(t *testing.T, srv *httptest.Server, st *staff.Store, username string, role staff.Role) *http.Client {
	t.Helper()
	password := username + "-long-enough-password"
	if _, err := st.Add(t.Context(), staff.CommandLine, username, role, password); err != nil {
		t.Fatal(err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *srv.Client()
	c.Jar = jar
	res := post(t, &c, srv.URL+loginPath, url.Values{"username": {username}, "password": {password}, "next": {"/admin/webhooks"}})
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/admin/webhooks" {
		t.Fatalf("sign-in as %s ended at %d %s", username, res.StatusCode, res.Request.URL)
	}
	return &c
}

// post sends a form as a browser does from a page of the same site
// (Sec-Fetch-Site and Origin: the admin refuses cross-site posts), and
// follows the redirect.
func post(t *testing.T, c *http.Client, target string, form url.Values) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(target)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// postForm posts a form with no fields, as the Resend button does.
func postForm(t *testing.T, c *http.Client, target string) *http.Response {
	t.Helper()
	res := post(t, c, target, url.Values{})
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func getDoc(t *testing.T, c *http.Client, target string) *goquery.Document {
	t.Helper()
	res, err := c.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", target, res.StatusCode)
	}
	return docOf(t, res)
}

func docOf(t *testing.T, res *http.Response) *goquery.Document {
	t.Helper()
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// signedAt is the unix time a CMPay-Signature header says it was made.
func signedAt(t *testing.T, header string) int64 {
	t.Helper()
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(part, "t="); ok {
			ts, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("signature %q: %v", header, err)
			}
			return ts
		}
	}
	t.Fatalf("signature %q has no time", header)
	return 0
}
