package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/webhooks"
)

// adminCSP allows this server's stylesheet and nothing else: the admin UI
// runs no script at all, and its chart is inline SVG drawn on the server.
const adminCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// adminPageSize is how many payments a page of the list shows.
const adminPageSize = 50

// Admin serves the admin UI under /admin: the payments list and a page per
// payment. The caller puts it behind the admin's credentials.
func Admin(svc *payments.Service, opts ...AdminOption) http.Handler {
	a := &admin{svc: svc, stats: &statsCache{ttl: statsTTL}}
	for _, o := range opts {
		o(a)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin", a.list)
	mux.HandleFunc("GET /admin/payments/{id}", a.payment)
	mux.HandleFunc("GET /admin/webhooks", a.webhooksPage)
	mux.HandleFunc("POST /admin/webhooks/deliveries/{id}/resend", a.resendDelivery)
	mux.Handle("GET /admin/static/", http.StripPrefix("/admin/static/", staticFiles("admin")))
	return secureHeaders(adminCSP, mux)
}

type admin struct {
	svc   *payments.Service
	stats *statsCache
	// webhooks serves the Webhooks page; nil when not configured.
	webhooks *webhooks.Service
}

// statsTTL is how long the last-24-hours overview is reused. Counting a
// day's attempts costs in proportion to the day's traffic (3 ms for 3,000
// attempts); reusing it for a few seconds keeps a busy day's list page
// fast, and a 24-hour overview loses nothing by being 10 s old.
const statsTTL = 10 * time.Second

// statsCache holds the latest overview and when it expires.
type statsCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	value   payments.Stats
	expires time.Time
}

func (c *statsCache) get(ctx context.Context, svc *payments.Service) (payments.Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Now().Before(c.expires) {
		return c.value, nil
	}
	st, err := svc.RecentStats(ctx, 24)
	if err != nil {
		return payments.Stats{}, err
	}
	c.value, c.expires = st, time.Now().Add(c.ttl)
	return st, nil
}

// filterForm is the list's filters as the URL carries them, so a filtered
// list is a link support staff can share.
type filterForm struct {
	Q, Client, Key, From, To    string
	Flagged, Replayed, Rejected bool
	Status                      string
	After                       string
}

func parseFilterForm(q url.Values) filterForm {
	on := func(name string) bool { v := q.Get(name); return v == "1" || v == "on" || v == "true" }
	return filterForm{
		Q:        strings.TrimSpace(q.Get("q")),
		Client:   strings.TrimSpace(q.Get("client")),
		Key:      q.Get("key"),
		From:     q.Get("from"),
		To:       q.Get("to"),
		Flagged:  on("flagged"),
		Replayed: on("replayed"),
		Rejected: on("rejected"),
		Status:   q.Get("status"),
		After:    q.Get("after"),
	}
}

// badFilter is a filter the list cannot apply, told to the user.
type badFilter string

func (b badFilter) Error() string { return string(b) }

// filter turns the form into a domain filter. Dates are whole UTC days; the
// "to" day is included.
func (f filterForm) filter() (payments.Filter, error) {
	pf := payments.Filter{
		ClientID:       f.Client,
		IdempotencyKey: f.Key,
		Flagged:        f.Flagged,
		Replayed:       f.Replayed,
		Rejected:       f.Rejected,
		Search:         f.Q,
		Status:         payments.Status(f.Status),
	}
	day := func(name, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return time.Time{}, badFilter(name + " must be a date like 2026-12-31")
		}
		return d, nil
	}
	var err error
	if pf.From, err = day("from", f.From); err != nil {
		return pf, err
	}
	if pf.To, err = day("to", f.To); err != nil {
		return pf, err
	}
	if !pf.To.IsZero() {
		pf.To = pf.To.AddDate(0, 0, 1)
	}
	return pf, nil
}

// url is the list's address with these filters, starting after a cursor.
func (f filterForm) url(after string) string {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("q", f.Q)
	set("client", f.Client)
	set("key", f.Key)
	set("from", f.From)
	set("to", f.To)
	set("status", f.Status)
	for name, on := range map[string]bool{"flagged": f.Flagged, "replayed": f.Replayed, "rejected": f.Rejected} {
		if on {
			q.Set(name, "1")
		}
	}
	set("after", after)
	if len(q) == 0 {
		return "/admin"
	}
	return "/admin?" + q.Encode()
}

// filtered reports whether any filter is set.
func (f filterForm) filtered() bool {
	f.After = ""
	return f != filterForm{}
}

// listView is everything the list page shows.
type listView struct {
	Form     filterForm
	Error    string
	Payments []payments.Payment
	NextURL  string
	Stats    payments.Stats
	Chart    chart
}

func (a *admin) list(w http.ResponseWriter, r *http.Request) {
	form := parseFilterForm(r.URL.Query())
	ctx := r.Context()

	// A payment id in the search box goes straight to the payment.
	if strings.HasPrefix(form.Q, "pay_") {
		if p, err := a.svc.Get(ctx, form.Q); err == nil {
			http.Redirect(w, r, "/admin/payments/"+url.PathEscape(p.ID), http.StatusSeeOther)
			return
		}
	}

	view := listView{Form: form}
	status := http.StatusOK
	filter, err := form.filter()
	if err == nil {
		var page payments.Page
		page, err = a.svc.List(ctx, filter, adminPageSize, form.After)
		view.Payments = page.Payments
		if page.HasNextPage {
			view.NextURL = form.url(page.EndCursor())
		}
	}
	if err != nil {
		var bad badFilter
		if !errors.As(err, &bad) && !errors.Is(err, payments.ErrInvalidInput) {
			serverError(w, r, err)
			return
		}
		// Say what is wrong above an empty list; the form keeps the input.
		view.Error = err.Error()
		status = http.StatusBadRequest
	}

	if view.Stats, err = a.stats.get(ctx, a.svc); err != nil {
		serverError(w, r, err)
		return
	}
	view.Chart = newChart(view.Stats)
	render(w, r, status, listPage(view))
}

// paymentView is everything a payment's page shows.
type paymentView struct {
	Payment  payments.Payment
	Refunds  []payments.Refund
	Attempts []attemptView
	// Lookalikes are the client's other payments of the same amount within
	// a day: a double charge made with two different keys, which no
	// idempotency key can catch, shows up here.
	Lookalikes []payments.Payment
}

// lookalikeWindow is how far around a payment lookalikes are searched.
const lookalikeWindow = 24 * time.Hour

// attemptView is one request on the timeline; for a rejected one, what it
// asked for beside what the key was first used for.
type attemptView struct {
	payments.Attempt
	Diffs []fieldDiff
	// Amount is what a capture or refund asked for, shown in the payment's
	// currency ("" when it gave none).
	Amount string
}

type fieldDiff struct{ Field, Original, Attempted string }

func (a *admin) payment(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, err := a.svc.Get(ctx, r.PathValue("id"))
	if errors.Is(err, payments.ErrNotFound) {
		render(w, r, http.StatusNotFound, notFoundPage(r.PathValue("id")))
		return
	}
	if err != nil {
		serverError(w, r, err)
		return
	}
	view := paymentView{Payment: p}
	if view.Refunds, err = a.svc.Refunds(ctx, p); err != nil {
		serverError(w, r, err)
		return
	}
	attempts, err := a.svc.Attempts(ctx, p)
	if err != nil {
		serverError(w, r, err)
		return
	}
	view.Attempts = make([]attemptView, len(attempts))
	for i, at := range attempts {
		view.Attempts[i] = attemptView{Attempt: at, Diffs: diffs(p, at), Amount: paramAmount(at.Params, p.Amount.Currency)}
	}
	near, err := a.svc.List(ctx, payments.Filter{
		ClientID: p.ClientID,
		Amount:   &p.Amount,
		From:     p.CreatedAt.Add(-lookalikeWindow),
		To:       p.CreatedAt.Add(lookalikeWindow),
	}, 20, "")
	if err != nil {
		serverError(w, r, err)
		return
	}
	for _, other := range near.Payments {
		if other.ID != p.ID {
			view.Lookalikes = append(view.Lookalikes, other)
		}
	}
	render(w, r, http.StatusOK, paymentPage(view))
}

// diffs puts what the key was first used for and what the rejected request
// asked for side by side, field by field.
func diffs(p payments.Payment, a payments.Attempt) []fieldDiff {
	out := make([]fieldDiff, 0, len(a.DifferingFields))
	for _, f := range a.DifferingFields {
		field := payments.Field(f)
		if field == payments.FieldAmount {
			out = append(out, fieldDiff{f, paramAmount(a.Held, p.Amount.Currency), paramAmount(a.Params, p.Amount.Currency)})
			continue
		}
		out = append(out, fieldDiff{f, orNone(a.Held[field]), orNone(a.Params[field])})
	}
	return out
}

// paramAmount shows a request's amount with the digits of the currency it
// names, or else of the payment's: "10.50 BRL".
func paramAmount(params payments.Params, paymentCurrency string) string {
	text, ok := params[payments.FieldAmount]
	if !ok {
		return ""
	}
	cur := paymentCurrency
	if c, ok := params[payments.FieldCurrency]; ok {
		cur = c
	}
	if m, err := payments.ParseAmount(text, cur); err == nil {
		return money(m)
	}
	return text + " " + cur
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// serverError logs what went wrong and shows only the request id.
func serverError(w http.ResponseWriter, r *http.Request, err error) {
	e := apierror.FromInternal(r.Context(), err)
	id, _ := e.Details["requestId"].(string)
	render(w, r, e.Status, errorPage(id))
}

func render(w http.ResponseWriter, r *http.Request, status int, page templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store") // payment data: never cached
	w.WriteHeader(status)
	_ = page.Render(r.Context(), w)
}
