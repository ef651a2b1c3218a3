package web

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// deliveriesPerPage is how many deliveries a page of the Webhooks page
// shows.
const deliveriesPerPage = 50

// webhooksView is what the Webhooks page shows.
type webhooksView struct {
	Available bool
	Notice    string
	// Error says why the filter was refused, above an empty list.
	Error     string
	Endpoints []models.WebhookEndpoint
	// MoreEndpoints: only the newest webhooks.AdminEndpoints are listed.
	MoreEndpoints bool
	Form          deliveryForm
	Deliveries    []webhooks.Delivery
	// OlderURL and NewerURL page through the deliveries; "" at either end.
	OlderURL, NewerURL string
	// CanResend: the staff member's role may resend (an operator's, as
	// the resend route requires), so FAILED deliveries get the button.
	CanResend bool
	Now       time.Time
}

// deliveryForm is the deliveries' filter as the page's GET form sends it,
// and the page's position (after or before a cursor).
type deliveryForm struct {
	Status, Endpoint, Payment, Client string
	After, Before                     string
}

// deliveryFields are the form's query parameters, which the page's links
// and a resend's return keep.
var deliveryFields = []string{"status", "endpoint", "payment", "client", "after", "before"}

// parseDeliveryForm reads the filter and position from q. A field given
// twice is refused: which of the two would count is not for the page to
// guess. The ids CMPay makes are trimmed (pasted with a space); a client
// id is taken as it is, since one may begin or end with spaces, as the
// payments list's client filter takes it.
func parseDeliveryForm(q url.Values) (deliveryForm, error) {
	for _, k := range deliveryFields {
		if len(q[k]) > 1 {
			return deliveryForm{}, &payments.InvalidInputError{Problems: []payments.Problem{{Field: k,
				Message: fmt.Sprintf("%s is given %d times: give it once", k, len(q[k]))}}}
		}
	}
	return deliveryForm{Status: strings.TrimSpace(q.Get("status")), Endpoint: strings.TrimSpace(q.Get("endpoint")),
		Payment: strings.TrimSpace(q.Get("payment")), Client: q.Get("client"),
		After: q.Get("after"), Before: q.Get("before")}, nil
}

func (f deliveryForm) filter() webhooks.DeliveryFilter {
	return webhooks.DeliveryFilter{Status: f.Status, EndpointID: f.Endpoint, PaymentID: f.Payment, ClientID: f.Client}
}

// filtered says whether any filter is set.
func (f deliveryForm) filtered() bool { return f.filter() != webhooks.DeliveryFilter{} }

// query is the form's filter and position as query parameters, those set
// only.
func (f deliveryForm) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "endpoint": f.Endpoint, "payment": f.Payment, "client": f.Client,
		"after": f.After, "before": f.Before} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// url is the page with the form's filter at the position after or before
// a cursor.
func (f deliveryForm) url(after, before string) string {
	f.After, f.Before = after, before
	if q := f.query().Encode(); q != "" {
		return "/admin/webhooks?" + q
	}
	return "/admin/webhooks"
}

// resendURL is where a delivery's Resend posts: it carries the page's
// filter and position, so that the page comes back as it was.
func (f deliveryForm) resendURL(id int64) string {
	u := "/admin/webhooks/deliveries/" + strconv.FormatInt(id, 10) + "/resend"
	if q := f.query().Encode(); q != "" {
		u += "?" + q
	}
	return u
}

func (a *admin) webhooksPage(w http.ResponseWriter, r *http.Request) {
	view := webhooksView{Available: a.webhooks != nil, Now: time.Now()}
	if a.webhooks == nil {
		render(w, r, http.StatusOK, webhooksPage(view))
		return
	}
	ctx, status := r.Context(), http.StatusOK
	var err error
	if view.Endpoints, view.MoreEndpoints, err = a.webhooks.AllEndpoints(ctx); err != nil {
		serverError(w, r, err)
		return
	}
	if sess, ok := sessionFrom(ctx); ok && sess.Account.Role.Allows(staff.Operator) {
		view.CanResend = true
	}
	view.Form, err = parseDeliveryForm(r.URL.Query())
	if err == nil {
		var page webhooks.DeliveryPage
		page, err = a.webhooks.Deliveries(ctx, view.Form.filter(), deliveriesPerPage, view.Form.After, view.Form.Before)
		view.Deliveries = page.Deliveries
		if page.Older != "" {
			view.OlderURL = view.Form.url(page.Older, "")
		}
		if page.Newer != "" {
			view.NewerURL = view.Form.url("", page.Newer)
		}
	}
	if err != nil {
		if !errors.Is(err, payments.ErrInvalidInput) {
			serverError(w, r, err)
			return
		}
		// Say what is wrong above an empty list; the form keeps the input.
		view.Error, status = err.Error(), http.StatusBadRequest
	}
	view.Notice = a.resendNotice(r, view.Deliveries)
	render(w, r, status, webhooksPage(view))
}

// resendNotice is what the page says after resendDelivery redirected to
// it: only for a delivery that exists (on the page, or read alone), the
// notices of a resend done or not needed only for one no longer failed,
// and that of a refused one only for one failed with nothing to send, so
// that a link someone else crafted cannot make the page state what is not
// so.
func (a *admin) resendNotice(r *http.Request, listed []webhooks.Delivery) string {
	q := r.URL.Query()
	resent, unchanged, unsendable := q.Get("resent"), q.Get("unchanged"), q.Get("unsendable")
	id, err := strconv.ParseInt(cmp.Or(resent, unchanged, unsendable), 10, 64)
	if err != nil {
		return ""
	}
	i := slices.IndexFunc(listed, func(d webhooks.Delivery) bool { return d.ID == id })
	var d webhooks.Delivery
	if i >= 0 {
		d = listed[i]
	} else if d, err = a.webhooks.Delivery(r.Context(), id); err != nil {
		// A delivery the filter leaves out (a resent one is no longer
		// FAILED) is read alone; an id of none shows nothing.
		return ""
	}
	if unsendable != "" {
		if d.Status != "FAILED" || !d.NothingToSend {
			return ""
		}
		return "Delivery " + strconv.FormatInt(id, 10) + " was not resent: " + nothingToSend
	}
	if d.Status == "FAILED" {
		return ""
	}
	if resent != "" {
		return "Delivery " + strconv.FormatInt(id, 10) + " was re-armed: it is attempted again now, with a fresh schedule of retries."
	}
	return "Delivery " + strconv.FormatInt(id, 10) + " was not failed any more (already resent, or delivered): nothing was changed."
}

// resendDelivery re-arms a failed delivery. It is safe to send twice: the
// second request finds the delivery no longer failed, changes nothing, and
// says so.
func (a *admin) resendDelivery(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if a.webhooks == nil { // events not running: the page says so
		http.Redirect(w, r, "/admin/webhooks", http.StatusSeeOther)
		return
	}
	sess, _ := sessionFrom(r.Context())
	// A resend is a staff action like any other: recorded in the same
	// transaction, so an entry that cannot be written leaves the delivery
	// as it was, and the error page tells the truth.
	err = a.webhooks.Resend(r.Context(), id, a.staff.ResendAudit(sess.Actor(a.addr(r)), id))
	// Back to the page as it was: its filter and position, from the
	// form's action (resendURL), and only those.
	back := url.Values{}
	for _, k := range deliveryFields {
		if v := r.URL.Query().Get(k); v != "" {
			back.Set(k, v)
		}
	}
	switch {
	case errors.Is(err, webhooks.ErrNotFailed):
		back.Set("unchanged", strconv.FormatInt(id, 10))
	case errors.Is(err, webhooks.ErrNothingToSend):
		// Refused before any change, so recorded here, as the payment
		// actions record what they refuse before the engine.
		if err := a.staff.RecordRefusedResend(r.Context(), sess.Actor(a.addr(r)), id,
			"nothing to send: failed before its body was kept, and its event is gone"); err != nil {
			serverError(w, r, err)
			return
		}
		back.Set("unsendable", strconv.FormatInt(id, 10))
	case err != nil:
		serverError(w, r, err)
		return
	default:
		back.Set("resent", strconv.FormatInt(id, 10))
	}
	http.Redirect(w, r, "/admin/webhooks?"+back.Encode(), http.StatusSeeOther)
}

// nothingToSend says, to staff, why a FAILED delivery with
// webhooks.Delivery.NothingToSend cannot be resent.
const nothingToSend = "it failed before CMPay kept the body of a failed delivery, and its event has been deleted since, " +
	"so there is nothing to send again."

// shownURL is an endpoint's URL as the admin shows it, to every role: its
// scheme, host and the start of its path, which say where deliveries go.
// The rest may be the client's secrets, not for every staff member's eyes:
// user information (sent to the receiver as HTTP Basic), the query (where
// a receiver's token often is), and the path past its first segment
// (Slack's https://hooks.slack.com/services/T…/B…/<secret>, Discord's
// /api/webhooks/<id>/<token>) each become "…". A first segment longer than
// shownSegment is hidden too: a lone token (https://webhook.site/<uuid>).
// No admin page edits an endpoint, so none needs the URL in full; the
// client that made it reads it through the API.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unreadable URL)" // stored only after it parsed, with a host
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString("…@")
	}
	b.WriteString(u.Host)
	first, rest, more := strings.Cut(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	switch {
	case len(first) > shownSegment:
		b.WriteString("/…")
	case first != "":
		b.WriteString("/" + first)
		if more && rest != "" {
			b.WriteString("/…")
		}
	}
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?…")
	}
	return b.String()
}

// shownSegment is the longest first path segment shownURL shows: words
// such as "services", "webhooks" or "api" fit; random tokens (22 and more
// characters, a UUID's 36) do not.
const shownSegment = 16

// endpointTypes shows an endpoint's event types.
func endpointTypes(stored string) string {
	if stored == "" {
		return "every event"
	}
	return strings.ReplaceAll(strings.Trim(stored, ","), ",", ", ")
}

// deliveryClass is the badge class of a delivery's status.
func deliveryClass(status string) string {
	switch status {
	case "DELIVERED":
		return "replayed"
	case "FAILED", "CANCELED":
		return "rejected"
	}
	return "created"
}

// nextAttempt says when a pending delivery is attempted next.
func nextAttempt(d webhooks.Delivery, now time.Time) string {
	switch {
	case d.Status != "PENDING":
		return "none"
	case d.LeaseUntil != nil && d.LeaseUntil.After(now):
		return "in flight"
	case !d.NextAttemptAt.After(now):
		return "now"
	}
	return stamp(d.NextAttemptAt)
}

// lastAnswer is the last attempt's outcome.
func lastAnswer(d webhooks.Delivery) string {
	if d.LastAttemptAt == nil {
		return "not attempted yet"
	}
	return answerText(d.LastStatus, d.LastError) + ", " + stamp(*d.LastAttemptAt)
}

func answerText(status int, problem string) string {
	out := "no answer"
	if status != 0 {
		out = "HTTP " + strconv.Itoa(status)
	}
	if problem != "" {
		out += ": " + problem
	}
	return out
}
