package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
)

func TestScopesOfRootFields(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	h := NewHandler(mustService(t, db.Gorm), DefaultOptions())
	token := func(scopes ...auth.Scope) context.Context {
		return auth.WithPrincipal(context.Background(), auth.Principal{Kind: auth.KindAPIToken, ID: "tok_x", Name: "t", Scopes: scopes})
	}
	const create = `mutation { createPayment(input: {clientId: "c", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "scoped") { replayed } }`
	const list = `{ payments { edges { cursor } } }`
	tests := []struct {
		name      string
		ctx       context.Context
		query     string
		forbidden bool
	}{
		{"read: a query", token(auth.PaymentsRead), list, false},
		{"read: a mutation", token(auth.PaymentsRead), create, true},
		{"write only: a query", token(auth.PaymentsWrite), list, true},
		{"metrics: a query through a fragment", token(auth.MetricsRead), `{ ...F } fragment F on Query { payments { edges { cursor } } }`, true},
		{"metrics: a query inline", token(auth.MetricsRead), `{ ... on Query { p: payment(id: "x") { id } } }`, true},
		{"metrics: a skipped field still counts", token(auth.MetricsRead), `{ __typename payments @skip(if: true) { edges { cursor } } }`, true},
		{"metrics: __typename", token(auth.MetricsRead), `{ __typename }`, false},
		{"metrics: the schema", token(auth.MetricsRead), `{ __schema { queryType { name } } }`, false},
		{"nobody: __typename", context.Background(), `{ __typename }`, true},
		{"write: a mutation", token(auth.PaymentsWrite), create, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := serveAs(t, h, tt.ctx, tt.query)
			if tt.forbidden != (res.code() == "FORBIDDEN") {
				t.Errorf("%+v, forbidden %v", res.Errors, tt.forbidden)
			}
		})
	}
	var n int64
	db.Gorm.Table("payments").Count(&n)
	if n != 1 {
		t.Errorf("%d payments, want the one made with payments:write", n)
	}
}

// A root field missing from the table is refused to everyone, full access
// included: nothing added to the schema is open by accident.
func TestUnlistedRootFieldsAreRefused(t *testing.T) {
	t.Parallel()
	doc := gqlparser.MustLoadQueryWithRules(parsedSchema, `{ payments { edges { cursor } } __typename }`, nil)
	check := scopeCheck{scopes: map[ast.Operation]map[string][]auth.Scope{ast.Query: {"__typename": signedIn}}}
	ctx := auth.WithPrincipal(context.Background(), auth.FullAccess(auth.KindEnvToken, "API_TOKENS"))
	err := check.MutateOperationContext(ctx, &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0]})
	if err == nil || err.Extensions["code"] != "FORBIDDEN" {
		t.Errorf("an unlisted root field: %v", err)
	}
}

// Every root field of the schema has a line in the table: one added to the
// schema without a scope fails here instead of being refused to everyone
// in production.
func TestEveryRootFieldHasAScope(t *testing.T) {
	t.Parallel()
	for kind, def := range map[ast.Operation]*ast.Definition{
		ast.Query: parsedSchema.Query, ast.Mutation: parsedSchema.Mutation, ast.Subscription: parsedSchema.Subscription,
	} {
		if def == nil {
			continue
		}
		for _, f := range def.Fields {
			if _, ok := rootFieldScopes[kind][f.Name]; !ok {
				t.Errorf("%s.%s has no scope in rootFieldScopes", def.Name, f.Name)
			}
		}
	}
}
