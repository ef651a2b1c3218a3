package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/auth"
)

// signedIn is the scope of root fields any principal may ask for.
var signedIn []auth.Scope

// one is a root field that a single scope opens.
func one(s auth.Scope) []auth.Scope { return []auth.Scope{s} }

// rootFieldScopes is the scopes each root field needs, any one of them. A
// root field that is not listed is refused to everyone, so that a field
// added to the schema is closed until it is given a line here. The
// contract's v2 fields are listed already, those not in the schema yet
// included: a line for a field that does not exist opens nothing.
var rootFieldScopes = map[ast.Operation]map[string][]auth.Scope{
	ast.Query: {
		"payment":          auth.ReadingAPayment,
		"payments":         one(auth.PaymentsRead),
		"webhookEndpoints": one(auth.WebhooksManage),
		"__typename":       signedIn,
		"__schema":         signedIn, // the schema is no secret: the Playground shows it
		"__type":           signedIn,
	},
	ast.Mutation: {
		"createPayment":         auth.CreatingPayments,
		"capturePayment":        one(auth.PaymentsWrite),
		"cancelPayment":         one(auth.PaymentsWrite),
		"refundPayment":         one(auth.PaymentsWrite),
		"createWebhookEndpoint": one(auth.WebhooksManage),
		"deleteWebhookEndpoint": one(auth.WebhooksManage),
		"__typename":            signedIn,
	},
	ast.Subscription: {
		"paymentEvents": one(auth.PaymentsRead),
	},
}

// scopeCheck refuses an operation, before any of it runs, when the
// request's principal lacks the scope of one of its root fields: FORBIDDEN,
// nothing done.
type scopeCheck struct {
	scopes map[ast.Operation]map[string][]auth.Scope // rootFieldScopes
}

func (scopeCheck) ExtensionName() string                   { return "ScopeCheck" }
func (scopeCheck) Validate(graphql.ExecutableSchema) error { return nil }

func (c scopeCheck) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	op := opCtx.Operation
	if op == nil {
		return nil
	}
	kind := op.Operation
	if kind == "" {
		kind = ast.Query
	}
	table := c.scopes[kind]
	for _, f := range rootFields(op.SelectionSet, opCtx.Doc.Fragments, nil) {
		scopes, listed := table[f.Name]
		var message string
		if !listed {
			message = "the field " + f.Name + " is not open to API tokens"
		} else if err := auth.Require(ctx, scopes...); err != nil {
			message = err.Error()
		} else {
			continue
		}
		name := f.Alias
		if name == "" {
			name = f.Name
		}
		return &gqlerror.Error{
			Message:    message,
			Path:       ast.Path{ast.PathName(name)},
			Extensions: map[string]any{"code": apierror.Forbidden},
		}
	}
	return nil
}

// rootFields lists an operation's root fields, those in fragments spread
// or written inline at the root included, whatever their directives say.
// seen holds the fragments already opened; nil until one is.
func rootFields(set ast.SelectionSet, fragments ast.FragmentDefinitionList, seen map[string]bool) []*ast.Field {
	var fields []*ast.Field
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			fields = append(fields, sel)
		case *ast.InlineFragment:
			fields = append(fields, rootFields(sel.SelectionSet, fragments, seen)...)
		case *ast.FragmentSpread:
			if seen[sel.Name] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[sel.Name] = true
			if f := fragments.ForName(sel.Name); f != nil {
				fields = append(fields, rootFields(f.SelectionSet, fragments, seen)...)
			}
		}
	}
	return fields
}
