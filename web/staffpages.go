package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cmpay/cmpay/staff"
)

// staffView is the staff accounts page.
type staffView struct {
	Me       string
	Accounts []staff.Account
	Error    string
	// Added is the account just added and its temporary password, shown
	// this once: it is stored only as a hash.
	Added, Password string
	// Changed names the account just changed.
	Changed string
	// Form keeps what was typed into the add form after an error.
	Form struct{ Username, Role string }
}

func (a *admin) staffPage(w http.ResponseWriter, r *http.Request, status int, view staffView) {
	sess, _ := sessionFrom(r.Context())
	view.Me = sess.Account.Username
	var err error
	if view.Accounts, err = a.staff.List(r.Context()); err != nil {
		serverError(w, r, err)
		return
	}
	// Changed comes from the URL: named only if it is an account, so that
	// a crafted link cannot make the page state any text.
	changed := staff.NormalizeUsername(view.Changed)
	if !slices.ContainsFunc(view.Accounts, func(acct staff.Account) bool { return acct.Username == changed }) {
		view.Changed = ""
	} else {
		view.Changed = changed
	}
	render(w, r, status, staffPage(view))
}

func (a *admin) staffList(w http.ResponseWriter, r *http.Request) {
	a.staffPage(w, r, http.StatusOK, staffView{Changed: r.URL.Query().Get("changed")})
}

// staffAdd adds an account with a temporary password, shown once on the
// page this POST answers (never put in a URL), to be changed at its first
// sign-in.
func (a *admin) staffAdd(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		a.staffPage(w, r, http.StatusBadRequest, staffView{Error: "The form could not be read; try again."})
		return
	}
	username, roleText := r.PostFormValue("username"), r.PostFormValue("role")
	view := staffView{}
	view.Form.Username, view.Form.Role = username, roleText
	role, err := staff.ParseRole(roleText)
	var password string
	if err == nil {
		password, err = a.staff.Add(r.Context(), sess.Actor(a.addr(r)), username, role, "")
	}
	if a.staffFailed(w, r, staff.ActStaffAdd, err, view) {
		return
	}
	a.staffPage(w, r, http.StatusOK, staffView{Added: staff.NormalizeUsername(username), Password: password})
}

func (a *admin) staffRole(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	_ = r.ParseForm()
	username := r.PathValue("username")
	role, err := staff.ParseRole(r.PostFormValue("role"))
	if err == nil {
		err = a.staff.SetRole(r.Context(), sess.Actor(a.addr(r)), username, role)
	}
	if a.staffFailed(w, r, staff.ActStaffRole, err, staffView{}) {
		return
	}
	http.Redirect(w, r, "/admin/staff?changed="+url.QueryEscape(username), http.StatusSeeOther)
}

// staffDisable disables an account and ends its sessions at once.
func (a *admin) staffDisable(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	username := r.PathValue("username")
	err := a.staff.Disable(r.Context(), sess.Actor(a.addr(r)), username)
	if a.staffFailed(w, r, staff.ActStaffDisable, err, staffView{}) {
		return
	}
	http.Redirect(w, r, "/admin/staff?changed="+url.QueryEscape(username), http.StatusSeeOther)
}

// staffFailed answers a failed account change, if err is one, and reports
// whether it did. A change that was not allowed or not well formed is
// audited as failed; nothing was changed.
func (a *admin) staffFailed(w http.ResponseWriter, r *http.Request, action staff.Action, err error, view staffView) bool {
	if err == nil {
		return false
	}
	sess, _ := sessionFrom(r.Context())
	target := r.PathValue("username")
	if target == "" {
		target = view.Form.Username
	}
	var bad *staff.InputError
	status := http.StatusBadRequest
	switch {
	case errors.As(err, &bad):
		view.Error = sentence(bad.Message)
	case errors.Is(err, staff.ErrNotFound):
		view.Error, status = "There is no staff account "+target+".", http.StatusNotFound
	default:
		serverError(w, r, err)
		return true
	}
	if err := a.staff.Record(r.Context(), sess.Actor(a.addr(r)), action, target, staff.OutcomeFailed, view.Error); err != nil {
		serverError(w, r, err)
		return true
	}
	a.staffPage(w, r, status, view)
	return true
}

// sentence makes a message start with a capital and end with a full stop.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// auditForm is the audit page's filters as the URL carries them.
type auditForm struct {
	Actor, Action, From, To, After string
}

func (f auditForm) url(after string) string {
	q := url.Values{}
	for k, v := range map[string]string{"actor": f.Actor, "action": f.Action, "from": f.From, "to": f.To, "after": after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return "/admin/audit"
	}
	return "/admin/audit?" + q.Encode()
}

// auditView is the audit log page.
type auditView struct {
	Form     auditForm
	Entries  []staff.Entry
	Accounts []staff.Account
	NextURL  string
	Error    string
}

// auditPageSize is how many entries a page of the audit log shows.
const auditPageSize = 100

// auditLog shows the audit log, newest first, filtered by staff member,
// action and time (whole UTC days, "to" included).
func (a *admin) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	form := auditForm{Actor: strings.TrimSpace(q.Get("actor")), Action: q.Get("action"), From: q.Get("from"), To: q.Get("to"), After: q.Get("after")}
	view := auditView{Form: form}
	status := http.StatusOK
	f := staff.AuditFilter{Actor: staff.NormalizeUsername(form.Actor), Action: staff.Action(form.Action)}
	if f.Actor == "" && form.Actor != "" {
		f.Actor = form.Actor
	}
	day := func(name, v string) time.Time {
		if v == "" || view.Error != "" {
			return time.Time{}
		}
		d, err := time.Parse(time.DateOnly, v)
		if err != nil {
			view.Error = name + " must be a date like 2026-12-31"
		} else if !filterDay(d) {
			view.Error = name + " must be a date from " + firstFilterDay + " to " + lastFilterDay
		}
		return d
	}
	f.From = day("from", form.From)
	if f.To = day("to", form.To); !f.To.IsZero() {
		f.To = f.To.AddDate(0, 0, 1)
	}
	if view.Error == "" {
		page, err := a.staff.AuditLog(r.Context(), f, auditPageSize, form.After)
		var bad *staff.InputError
		switch {
		case errors.As(err, &bad):
			view.Error = bad.Message
		case err != nil:
			serverError(w, r, err)
			return
		}
		view.Entries = page.Entries
		for i, e := range view.Entries {
			e.Actor, e.Address, e.Target, e.Detail = visible(e.Actor), visible(e.Address), visible(e.Target), visible(e.Detail)
			view.Entries[i] = e
		}
		if page.Next != "" {
			view.NextURL = form.url(page.Next)
		}
	}
	if view.Error != "" {
		status = http.StatusBadRequest
	}
	var err error
	if view.Accounts, err = a.staff.List(r.Context()); err != nil {
		serverError(w, r, err)
		return
	}
	render(w, r, status, auditPage(view))
}
