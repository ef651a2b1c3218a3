package graph

import (
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/cmpay/cmpay/payments"
)

// NewHandler serves the GraphQL API over svc: queries by GET or POST,
// mutations by POST, per GraphQL over HTTP.
func NewHandler(svc *payments.Service) http.Handler {
	srv := handler.New(NewExecutableSchema(Config{Resolvers: &Resolver{Service: svc}}))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})

	srv.SetValidationRulesFn(func() *rules.Rules {
		r := rules.NewDefaultRules()
		r.AddRule(keepDecimalLiterals.Name, keepDecimalLiterals.RuleFunc)
		return r
	})
	// Parsed and validated documents are reused across requests.
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})

	srv.SetErrorPresenter(presentError)
	srv.SetRecoverFunc(recoverPanic)
	return srv
}
