package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/webhooks"
)

// recentDeliveries is how many deliveries the Webhooks page shows.
const recentDeliveries = 100

// webhooksView is what the Webhooks page shows.
type webhooksView struct {
	Available  bool
	Notice     string
	Endpoints  []models.WebhookEndpoint
	Deliveries []webhooks.Delivery
	Now        time.Time
}

func (a *admin) webhooksPage(w http.ResponseWriter, r *http.Request) {
	view := webhooksView{Available: a.webhooks != nil, Now: time.Now()}
	if a.webhooks != nil {
		var err error
		if view.Endpoints, _, err = a.webhooks.AllEndpoints(r.Context()); err != nil {
			serverError(w, r, err)
			return
		}
		if view.Deliveries, err = a.webhooks.RecentDeliveries(r.Context(), recentDeliveries); err != nil {
			serverError(w, r, err)
			return
		}
	}
	view.Notice = resendNotice(r.URL.Query(), view.Deliveries)
	render(w, r, http.StatusOK, webhooksPage(view))
}

// resendNotice is what the page says after resendDelivery redirected to
// it: only for a delivery the page lists, so that a link someone else
// crafted cannot make the page state whatever text it carries.
func resendNotice(q url.Values, listed []webhooks.Delivery) string {
	resent, unchanged := q.Get("resent"), q.Get("unchanged")
	text := resent
	if text == "" {
		text = unchanged
	}
	id, err := strconv.ParseInt(text, 10, 64)
	if err != nil || !slices.ContainsFunc(listed, func(d webhooks.Delivery) bool { return d.ID == id }) {
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
	switch {
	case errors.Is(err, webhooks.ErrNotFailed):
		http.Redirect(w, r, "/admin/webhooks?unchanged="+strconv.FormatInt(id, 10), http.StatusSeeOther)
	case err != nil:
		serverError(w, r, err)
	default:
		http.Redirect(w, r, "/admin/webhooks?resent="+strconv.FormatInt(id, 10), http.StatusSeeOther)
	}
}

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
