package web

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/storable"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
	"github.com/cmpay/cmpay/webhooks"
)

// adminCSP allows this server's stylesheet and nothing else: the admin UI
// runs no script at all, and its chart is inline SVG drawn on the server.
const adminCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// adminPageSize is how many payments a page of the list shows.
const adminPageSize = 50

// Admin serves the admin UI under /admin: the sign-in, the payments list
// and a page per payment with its actions, the CSV export, the staff
// accounts and the audit log. Every page but the sign-in needs a session;
// each route needs a role (handle), and every state-changing request from
// another site is refused (crossSite).
func Admin(d AdminDeps) http.Handler {
	a := &admin{svc: d.Payments, staff: d.Staff, stats: &statsCache{ttl: statsTTL}, limiter: d.Limiter,
		clientAddr: d.ClientAddr, isHTTPS: d.HTTPS, webhooks: d.Webhooks, tokens: d.Tokens,
		events: d.ProcessorEvents, log: d.Logger}
	if a.limiter == nil {
		a.limiter = noLimit{}
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	mux := http.NewServeMux()
	// Open: the sign-in and its stylesheet.
	mux.HandleFunc("GET "+loginPath, a.loginForm)
	mux.HandleFunc("POST "+loginPath, a.login)
	mux.Handle("GET "+staticPath, http.StripPrefix(staticPath, staticFiles("admin")))
	for _, rt := range a.routes() {
		a.handle(mux, rt.Pattern, route{need: rt.Need, action: rt.Action}, rt.handler)
	}
	// Anything else under /admin, for someone signed in.
	a.handle(mux, "/admin/", route{need: staff.Viewer, action: staff.ActPaymentsView}, func(w http.ResponseWriter, r *http.Request) {
		render(w, r, http.StatusNotFound, pageNotFound(r.URL.Path))
	})
	return secureHeaders(adminCSP, a.crossSite(withDeadline(cmp.Or(d.RequestTimeout, DefaultAdminRequestTimeout), a.withSession(mux))))
}

// DefaultAdminRequestTimeout bounds an admin request's work with the
// database unless AdminDeps.RequestTimeout says otherwise, so that while
// the database does not answer, pages, actions and the sign-in fail (503)
// instead of waiting for it. A page takes milliseconds; the CSV export,
// which streams every payment, is the exception: it bounds each page it
// reads instead (payments.readTimeout).
const DefaultAdminRequestTimeout = 10 * time.Second

func withDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == exportPath {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Route is one route behind the sign-in: its pattern, the least role it
// needs, and what it is called in the audit log.
type Route struct {
	Pattern string
	Need    staff.Role
	Action  staff.Action
	handler http.HandlerFunc
}

// routes lists every route behind the sign-in, in one place.
func (a *admin) routes() []Route {
	return []Route{
		// Anyone signed in, even with a temporary password.
		{"POST " + logoutPath, staff.Viewer, staff.ActSignOut, a.logout},
		{"GET " + accountPath, staff.Viewer, staff.ActPasswordChange, a.account},
		{"POST " + accountPath, staff.Viewer, staff.ActPasswordChange, a.changePassword},
		// Viewers: the payments.
		{"GET /admin", staff.Viewer, staff.ActPaymentsView, a.list},
		{"GET /admin/payments/{id}", staff.Viewer, staff.ActPaymentsView, a.payment},
		{"GET " + exportPath, staff.Viewer, staff.ActExport, a.export},
		// Operators: the payment page's actions.
		{"POST /admin/payments/{id}/capture", staff.Operator, staff.ActCapture, a.capture},
		{"POST /admin/payments/{id}/cancel", staff.Operator, staff.ActCancel, a.cancel},
		{"POST /admin/payments/{id}/refund", staff.Operator, staff.ActRefund, a.refund},
		// Admins: staff accounts and the audit log.
		{"GET /admin/staff", staff.Admin, staff.ActStaffView, a.staffList},
		{"POST /admin/staff", staff.Admin, staff.ActStaffAdd, a.staffAdd},
		{"POST /admin/staff/{username}/role", staff.Admin, staff.ActStaffRole, a.staffRole},
		{"POST /admin/staff/{username}/disable", staff.Admin, staff.ActStaffDisable, a.staffDisable},
		{"GET /admin/audit", staff.Admin, staff.ActAuditView, a.auditLog},
		{"GET /admin/tokens", staff.Admin, staff.ActTokensView, a.tokensList},
		{"POST /admin/tokens", staff.Admin, staff.ActTokenCreate, a.tokenCreate},
		{"POST /admin/tokens/{id}/revoke", staff.Admin, staff.ActTokenRevoke, a.tokenRevoke},
		// Webhooks: anyone reads the page; a resend (safe to repeat) is
		// an operator's.
		{"GET /admin/webhooks", staff.Viewer, staff.ActWebhooksView, a.webhooksPage},
		{"POST /admin/webhooks/deliveries/{id}/resend", staff.Operator, staff.ActWebhookResend, a.resendDelivery},
	}
}

// AdminRoutes lists the admin's routes behind the sign-in and the role
// each needs, for tests that call every one of them as every role.
func AdminRoutes() []Route {
	return (&admin{}).routes()
}

type admin struct {
	svc        *payments.Service
	staff      *staff.Store
	stats      *statsCache
	limiter    SignInLimiter
	clientAddr func(*http.Request) string
	isHTTPS    func(*http.Request) bool
	// webhooks serves the Webhooks page; nil when not configured.
	webhooks *webhooks.Service
	// tokens serves the API tokens page; nil when not configured.
	tokens *apitoken.Store
	// events lists the processor's events of a payment; nil when none are
	// taken in.
	events *intake.Service
	log    *slog.Logger
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
	// Waiting keeps the payments with a capture, cancel or refund the
	// processor has not settled ("waiting=1").
	Waiting bool
	After   string
	// bad is why a value in the URL cannot be taken (a checkbox sent as
	// "yes"), said by filter; a filter is never silently dropped.
	bad string
}

// parseFilterForm reads the filters from the URL. Only the search box is
// trimmed (an id pasted with a space); a client id is taken as it is, since
// one may begin or end with spaces and the payment page links to it so.
func parseFilterForm(q url.Values) filterForm {
	var bad []string
	on := func(name string) bool {
		switch v := q.Get(name); v {
		case "", "0", "off", "false":
			return false
		case "1", "on", "true":
			return true
		default:
			bad = append(bad, name+" must be 1 or left out, not "+strconv.Quote(clipped(visible(v))))
			return false
		}
	}
	f := filterForm{
		Q:        strings.TrimSpace(q.Get("q")),
		Client:   q.Get("client"),
		Key:      q.Get("key"),
		From:     q.Get("from"),
		To:       q.Get("to"),
		Flagged:  on("flagged"),
		Replayed: on("replayed"),
		Rejected: on("rejected"),
		Status:   q.Get("status"),
		Waiting:  on("waiting"),
		After:    q.Get("after"),
	}
	f.bad = strings.Join(bad, "; ")
	return f
}

// badFilter is a filter the list cannot apply, told to the user.
type badFilter string

func (b badFilter) Error() string { return string(b) }

// The days a date filter takes: a range ends the day after its "to" day,
// and both databases hold and order alike only years 1 to 9999
// (storable.Time).
const (
	firstFilterDay = "0001-01-01"
	lastFilterDay  = "9999-12-30"
)

// filterDay says whether a date filter takes day d (a UTC midnight), by
// its text: dates of four-digit years order as their text does.
func filterDay(d time.Time) bool {
	day := d.Format(time.DateOnly)
	return firstFilterDay <= day && day <= lastFilterDay
}

// filter turns the form into a domain filter. Dates are whole UTC days; the
// "to" day is included.
func (f filterForm) filter() (payments.Filter, error) {
	if f.bad != "" {
		return payments.Filter{}, badFilter(f.bad)
	}
	pf := payments.Filter{
		ClientID:         f.Client,
		IdempotencyKey:   f.Key,
		Flagged:          f.Flagged,
		Replayed:         f.Replayed,
		Rejected:         f.Rejected,
		Search:           f.Q,
		Status:           payments.Status(f.Status),
		WaitingOperation: f.Waiting,
	}
	day := func(name, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return time.Time{}, badFilter(name + " must be a date like 2026-12-31")
		}
		if !filterDay(d) {
			return time.Time{}, badFilter(name + " must be a date from " + firstFilterDay + " to " + lastFilterDay)
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
	for name, on := range map[string]bool{"flagged": f.Flagged, "replayed": f.Replayed, "rejected": f.Rejected,
		"waiting": f.Waiting} {
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

// csvURL is the CSV export of these filters: every matching payment, not
// one page.
func (f filterForm) csvURL() string {
	f.After = ""
	return exportPath + strings.TrimPrefix(f.url(""), "/admin")
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

	// A payment id, a refund id or a processor's reference in the search
	// box goes straight to the payment.
	if id, err := a.searchedPayment(ctx, form.Q); err != nil {
		serverError(w, r, err)
		return
	} else if id != "" {
		http.Redirect(w, r, "/admin/payments/"+url.PathEscape(id), http.StatusSeeOther)
		return
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

// searchedPayment is the id of the payment q names by its id, a refund's
// id (ref_…) or its reference at the processor (pi_…; sbx_pi.… on a
// server running the sandbox, whose references no index holds), each
// else read by its index; "" when q names none, and the list searches
// for it.
func (a *admin) searchedPayment(ctx context.Context, q string) (string, error) {
	var (
		id  string
		err error
	)
	switch {
	case q == "" || !storable.Text(q):
		return "", nil // the list says why nothing can match
	case strings.HasPrefix(q, "pay_"):
		var p payments.Payment
		p, err = a.svc.Get(ctx, q)
		id = p.ID
	case strings.HasPrefix(q, "ref_"):
		id, err = a.svc.PaymentOfRefund(ctx, q)
	default:
		id, err = a.svc.PaymentOfReference(ctx, q)
	}
	if errors.Is(err, payments.ErrNotFound) {
		return "", nil
	}
	return id, err
}

// paymentView is everything a payment's page shows.
type paymentView struct {
	Payment  payments.Payment
	Refunds  []payments.Refund
	Attempts []attemptView
	// ProcessorCalls are the calls made to the payment's processor, oldest
	// first.
	ProcessorCalls []payments.ProcessorCall
	// Lookalikes are the client's other payments of the same amount within
	// a day: a double charge made with two different keys, which no
	// idempotency key can catch, shows up here.
	Lookalikes []payments.Payment
	// MoreLookalikes says there are more than those listed (the list stops
	// at maxLookalikes).
	MoreLookalikes bool

	// Actions are the forms the staff member may use on the payment as it
	// is now; nil for a viewer (actions.go).
	Actions *actionForms
	// Done says what an action just did; Problem why one did nothing.
	Done    *actionResult
	Problem string

	// Async is a Pix or boleto's next action and times, PixQR its Pix
	// code as a QR code (a data: URL), and ProcessorEvents the events the
	// processor sent about the payment (paylater.templ).
	Async           payments.AsyncState
	PixQR           string
	ProcessorEvents []intake.Received
	// Duplicates are the second charges or refunds the processor holds
	// for the payment (duplicates.templ).
	Duplicates []payments.Duplicate
}

// lookalikeWindow is how far around a payment lookalikes are searched, and
// maxLookalikes how many payments of that window are read.
const (
	lookalikeWindow = 24 * time.Hour
	maxLookalikes   = 20
)

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
	view, err := a.paymentView(r.Context(), r.PathValue("id"))
	if errors.Is(err, payments.ErrNotFound) {
		render(w, r, http.StatusNotFound, notFoundPage(clipped(visible(r.PathValue("id")))))
		return
	}
	if err != nil {
		serverError(w, r, err)
		return
	}
	// After an action's redirect: say what it did (actions.go).
	view.Done = resultOf(view, r.URL.Query().Get("done"))
	render(w, r, http.StatusOK, paymentPage(view))
}

// paymentView reads everything a payment's page shows, with the action
// forms the signed-in staff member may use on it.
func (a *admin) paymentView(ctx context.Context, id string) (paymentView, error) {
	p, err := a.svc.Get(ctx, id)
	if err != nil {
		return paymentView{}, err
	}
	view := paymentView{Payment: p}
	if view.Refunds, err = a.svc.Refunds(ctx, p); err != nil {
		return paymentView{}, err
	}
	attempts, err := a.svc.Attempts(ctx, p)
	if err != nil {
		return paymentView{}, err
	}
	calls, err := a.svc.ProcessorCallsOf(ctx, []payments.Payment{p})
	if err != nil {
		return paymentView{}, err
	}
	view.ProcessorCalls = calls[0]
	view.Attempts = make([]attemptView, len(attempts))
	for i, at := range attempts {
		view.Attempts[i] = attemptView{Attempt: at, Diffs: diffs(p, at), Amount: paramAmount(at.Params, p.Amount.Currency)}
	}
	near, err := a.svc.List(ctx, payments.Filter{
		ClientID: p.ClientID,
		Amount:   &p.Amount,
		From:     p.CreatedAt.Add(-lookalikeWindow),
		To:       p.CreatedAt.Add(lookalikeWindow),
	}, maxLookalikes, "")
	if err != nil {
		return paymentView{}, err
	}
	view.MoreLookalikes = near.HasNextPage
	for _, other := range near.Payments {
		if other.ID != p.ID {
			view.Lookalikes = append(view.Lookalikes, other)
		}
	}
	if sess, ok := sessionFrom(ctx); ok && sess.Account.Role.Allows(staff.Operator) {
		view.Actions = newActionForms(p)
	}
	if err := a.processorView(ctx, &view); err != nil {
		return paymentView{}, err
	}
	return view, nil
}

// processorView adds what the page shows of the payment at its processor:
// a second charge or refund it holds, the events the processor sent about
// it (for a card, a refund returned or an authorization expired there),
// and a Pix or boleto payment's state and code.
func (a *admin) processorView(ctx context.Context, view *paymentView) error {
	p := view.Payment
	var err error
	if view.Duplicates, err = a.svc.DuplicatesOf(ctx, p.ID); err != nil {
		return err
	}
	if a.events != nil && p.ProcessorReference != "" {
		if view.ProcessorEvents, err = a.events.EventsOf(ctx, p.ProcessorReference); err != nil {
			return err
		}
	}
	if !paidLater(p) {
		return nil
	}
	if view.Async, err = a.svc.AsyncStateOf(ctx, p.ID); err != nil {
		return err
	}
	if na := view.Async.NextAction; na != nil && na.PixCode != "" {
		if view.PixQR, err = qrDataURL(na.PixCode); err != nil {
			return err
		}
	}
	return nil
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

// serverError logs what went wrong and shows only the request id; a value
// the database refused is the request's fault and says so instead (400).
func serverError(w http.ResponseWriter, r *http.Request, err error) {
	if database.IsUnavailable(err) {
		// Not a bug: the database is down, failing over or read-only.
		// 503 and Retry-After, as the API answers (apierror.FromDomain).
		apierror.LogUnavailable(r.Context(), err)
		w.Header().Set("Retry-After", "1")
		render(w, r, http.StatusServiceUnavailable, unavailablePage())
		return
	}
	e := apierror.FromInternal(r.Context(), err)
	if e.Code == apierror.BadUserInput {
		// A value the database refused (apierror.FromInternal): the request's.
		render(w, r, e.Status, badInputPage(e.Message))
		return
	}
	id, _ := e.Details["requestId"].(string)
	render(w, r, e.Status, errorPage(id))
}

func render(w http.ResponseWriter, r *http.Request, status int, page templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store") // payment data: never cached
	w.WriteHeader(status)
	_ = page.Render(r.Context(), w)
}
