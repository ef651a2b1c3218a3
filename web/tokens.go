package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/staff"
)

// The API tokens page (/admin/tokens, admin role): the same as the
// `cmpay tokens` command, for those who manage the API from the admin.

// tokensView is what the tokens page shows.
type tokensView struct {
	Available bool // false when the server runs without a token store
	Tokens    []apitoken.Token
	Error     string
	// Created is the token just made and its secret, shown this once: only
	// its digest is stored.
	Created *apitoken.Token
	Secret  string
	Revoked string
	Form    struct {
		Name, Client string
		Scopes       []auth.Scope
	}
}

func (a *admin) tokensPage(w http.ResponseWriter, r *http.Request, status int, view tokensView) {
	view.Available = a.tokens != nil
	if a.tokens != nil {
		var err error
		if view.Tokens, err = a.tokens.List(r.Context()); err != nil {
			serverError(w, r, err)
			return
		}
	}
	// Revoked comes from the URL: named only if it is a revoked token, so
	// that a crafted link cannot make the page state any text.
	if !slices.ContainsFunc(view.Tokens, func(t apitoken.Token) bool { return t.ID == view.Revoked && t.RevokedAt != nil }) {
		view.Revoked = ""
	}
	if view.Form.Scopes == nil {
		view.Form.Scopes = auth.DefaultScopes
	}
	render(w, r, status, tokensPage(view))
}

func (a *admin) tokensList(w http.ResponseWriter, r *http.Request) {
	a.tokensPage(w, r, http.StatusOK, tokensView{Revoked: r.URL.Query().Get("revoked")})
}

// tokenCreate makes a token and shows its secret on the page this POST
// answers (never in a URL).
func (a *admin) tokenCreate(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || a.tokens == nil {
		a.tokensPage(w, r, http.StatusBadRequest, tokensView{Error: "The form could not be read; try again."})
		return
	}
	var view tokensView
	view.Form.Name, view.Form.Client = strings.TrimSpace(r.PostFormValue("name")), strings.TrimSpace(r.PostFormValue("client"))
	scopes, err := auth.ParseScopes(strings.Join(r.PostForm["scope"], ","))
	view.Form.Scopes = scopes
	var token apitoken.Token
	var secret string
	who := sess.Actor(a.addr(r))
	if err == nil {
		token, secret, err = a.tokens.Create(r.Context(), view.Form.Name, view.Form.Client, scopes,
			a.staff.TokenAudit(who, staff.ActTokenCreate))
	}
	if err != nil {
		if !errors.Is(err, apitoken.ErrInvalid) && !strings.Contains(err.Error(), "scope") {
			serverError(w, r, err)
			return
		}
		view.Error = sentence(strings.TrimPrefix(err.Error(), apitoken.ErrInvalid.Error()+": "))
		if err := a.staff.Record(r.Context(), who, staff.ActTokenCreate, view.Form.Name, staff.OutcomeFailed, view.Error); err != nil {
			serverError(w, r, err)
			return
		}
		a.tokensPage(w, r, http.StatusBadRequest, view)
		return
	}
	a.tokensPage(w, r, http.StatusOK, tokensView{Created: &token, Secret: secret})
}

// tokenRevoke revokes a token; revoking it again changes nothing.
func (a *admin) tokenRevoke(w http.ResponseWriter, r *http.Request) {
	sess, _ := sessionFrom(r.Context())
	id := r.PathValue("id")
	if a.tokens == nil {
		http.Redirect(w, r, "/admin/tokens", http.StatusSeeOther)
		return
	}
	who := sess.Actor(a.addr(r))
	_, err := a.tokens.Revoke(r.Context(), id, a.staff.TokenAudit(who, staff.ActTokenRevoke))
	switch {
	case errors.Is(err, apitoken.ErrNotFound):
		// Nothing changed: the refusal is recorded on its own.
		if err := a.staff.Record(r.Context(), who, staff.ActTokenRevoke, id, staff.OutcomeFailed, "no such token"); err != nil {
			serverError(w, r, err)
			return
		}
		a.tokensPage(w, r, http.StatusNotFound, tokensView{Error: "There is no token " + id + "."})
		return
	case err != nil:
		serverError(w, r, err)
		return
	}
	http.Redirect(w, r, "/admin/tokens?revoked="+url.QueryEscape(id), http.StatusSeeOther)
}
