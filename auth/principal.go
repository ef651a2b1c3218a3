package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cmpay/cmpay/internal/clientid"
)

// Scope is a permission an API token carries.
type Scope string

// The scopes there are. A token created without --scopes gets
// DefaultScopes; API_TOKENS and the admin get them all.
const (
	PaymentsRead   Scope = "payments:read"   // queries, REST GET, subscriptions
	PaymentsWrite  Scope = "payments:write"  // mutations that create or change payments, REST POST
	WebhooksManage Scope = "webhooks:manage" // webhook endpoints
	MetricsRead    Scope = "metrics:read"    // GET /metrics
	// PaymentsCreate creates payments and reads one payment by its id, and
	// nothing else: a token a shopper's page may hold, since whoever loads
	// the page holds it too. It lists nothing, changes no payment after
	// its creation, and looks nothing up by idempotency key.
	PaymentsCreate Scope = "payments:create"
)

// AllScopes lists every scope, in the order they are shown.
var AllScopes = []Scope{PaymentsRead, PaymentsWrite, PaymentsCreate, WebhooksManage, MetricsRead}

// What a request needs when more than one scope opens it (Require takes
// any one of them): creating a payment, payments:write or payments:create;
// reading one payment by its id, payments:read or payments:create.
var (
	CreatingPayments = []Scope{PaymentsWrite, PaymentsCreate}
	ReadingAPayment  = []Scope{PaymentsRead, PaymentsCreate}
)

// DefaultScopes are a new token's scopes unless others are asked for.
var DefaultScopes = []Scope{PaymentsRead, PaymentsWrite}

// ParseScopes reads a comma-separated list such as
// "payments:read,metrics:read". Every name must be one of AllScopes; the
// result is in AllScopes' order, each once.
func ParseScopes(list string) ([]Scope, error) {
	var scopes []Scope
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(AllScopes, Scope(name)) {
			return nil, fmt.Errorf("unknown scope %q: the scopes are %s", name, JoinScopes(AllScopes))
		}
		scopes = append(scopes, Scope(name))
	}
	if len(scopes) == 0 {
		return nil, fmt.Errorf("no scope given: the scopes are %s", JoinScopes(AllScopes))
	}
	return Sorted(scopes), nil
}

// Sorted returns scopes in AllScopes' order, each once, dropping names
// that are not scopes.
func Sorted(scopes []Scope) []Scope {
	var out []Scope
	for _, s := range AllScopes {
		if slices.Contains(scopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// JoinScopes writes scopes comma-separated, as ParseScopes reads them.
func JoinScopes(scopes []Scope) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ",")
}

// Kind says how a principal signed in.
type Kind string

const (
	KindAPIToken Kind = "api_token" // a managed token (cmpay tokens create)
	KindEnvToken Kind = "env_token" // one of API_TOKENS
	KindAdmin    Kind = "admin"     // the admin's HTTP Basic credentials
)

// Principal is who a request acts for, and what it may do.
type Principal struct {
	Kind Kind
	// ID is a managed token's id (tok_…); empty for the others.
	ID string
	// Name is the token's name, "API_TOKENS", or the admin's user name.
	Name   string
	Scopes []Scope
	// ClientID is the one client a bound token acts for; empty when the
	// principal may act for every client.
	ClientID string
}

// FullAccess is a principal with every scope and no client binding: an
// API_TOKENS token, or the admin.
func FullAccess(kind Kind, name string) Principal {
	return Principal{Kind: kind, Name: name, Scopes: slices.Clone(AllScopes)}
}

// Has reports whether p carries scope.
func (p Principal) Has(scope Scope) bool { return slices.Contains(p.Scopes, scope) }

// Bound reports whether p acts for one client only.
func (p Principal) Bound() bool { return p.ClientID != "" }

type principalKey struct{}

// WithPrincipal returns ctx acting for p; the HTTP layer calls it once a
// request's credentials are checked.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext is the principal ctx acts for, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// ErrForbidden is what every refusal of this package unwraps to; apierror
// maps it to FORBIDDEN (REST: 403).
var ErrForbidden = errors.New("forbidden")

// ForbiddenError says why a principal may not do something.
type ForbiddenError struct {
	// Scope is the scope that was missing, if that was the reason.
	Scope Scope
	msg   string
}

func (e *ForbiddenError) Error() string { return e.msg }
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// Require returns nil when ctx's principal carries one of scopes, and a
// ForbiddenError (naming the first) otherwise. No scope, or the empty one,
// asks only for a principal. A context without a principal is refused:
// code that needs a scope must run for someone.
func Require(ctx context.Context, scopes ...Scope) error {
	var first Scope
	if len(scopes) > 0 {
		first = scopes[0]
	}
	p, ok := FromContext(ctx)
	if !ok {
		return &ForbiddenError{Scope: first, msg: "the request is not signed in"}
	}
	if first == "" || slices.ContainsFunc(scopes, p.Has) {
		return nil
	}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return &ForbiddenError{Scope: first, msg: "this token lacks the scope " + strings.Join(names, " or ")}
}

// BoundClient is the client ctx's principal is bound to, or "" when it may
// act for every client. The payments package takes it as payments.Origin's
// Client. (Every request through the API has a principal: the HTTP layer
// refuses the others before they get here.)
func BoundClient(ctx context.Context) string {
	if p, ok := FromContext(ctx); ok && p.Bound() {
		return p.ClientID
	}
	return ""
}

// Sees reports whether ctx's principal may see clientID's payments.
func Sees(ctx context.Context, clientID string) bool {
	bound := BoundClient(ctx)
	return bound == "" || bound == clientid.Normalize(clientID)
}
