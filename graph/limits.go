package graph

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"

	"github.com/cmpay/cmpay/graph/model"
)

// maxDepthRule refuses operations whose selections nest deeper than limit.
// The deepest useful query here (payments → edges → node → attempts →
// outcome) has depth 5. Introspection (__schema, __type) is left to
// gqlparser's own introspection depth rule: GraphiQL's schema query nests
// deeply by design.
func maxDepthRule(limit int) core.Rule {
	return core.Rule{
		Name: "MaxQueryDepth",
		RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
			observers.OnOperation(func(walker *core.Walker, op *ast.OperationDefinition) {
				if d := depth(op.SelectionSet, walker.Document.Fragments, map[string]bool{}); d > limit {
					addError(
						core.Message("query depth %d exceeds the limit of %d; split it into smaller queries", d, limit),
						core.At(op.Position),
					)
				}
			})
		},
	}
}

func depth(set ast.SelectionSet, fragments ast.FragmentDefinitionList, visiting map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		d := 0
		switch sel := sel.(type) {
		case *ast.Field:
			if sel.Name == "__schema" || sel.Name == "__type" {
				continue
			}
			d = 1 + depth(sel.SelectionSet, fragments, visiting)
		case *ast.InlineFragment:
			d = depth(sel.SelectionSet, fragments, visiting)
		case *ast.FragmentSpread:
			// Cycles are refused by another rule; here they must only not loop.
			frag := fragments.ForName(sel.Name)
			if frag == nil || visiting[sel.Name] {
				continue
			}
			visiting[sel.Name] = true
			d = depth(frag.SelectionSet, fragments, visiting)
			delete(visiting, sel.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// noIntrospectionRule refuses __schema and __type when introspection is
// switched off, with an error that says so, before anything executes.
var noIntrospectionRule = core.Rule{
	Name: "NoIntrospection",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnField(func(_ *core.Walker, field *ast.Field) {
			if field.Name == "__schema" || field.Name == "__type" {
				addError(
					core.Message("introspection is switched off on this server (GRAPHQL_INTROSPECTION=false)"),
					core.At(field.Position),
				)
			}
		})
	},
}

// codeTooComplex is the code gqlgen's complexity limit uses.
const codeTooComplex = "COMPLEXITY_LIMIT_EXCEEDED"

// listMultiplier is how many items complexity assumes an unbounded list
// (a payment's attempts) holds.
const listMultiplier = 10

// complexity prices lists by their size, so that a query cannot ask for a
// hundred payments with a hundred fields each and slip under the limit.
func complexity() ComplexityRoot {
	var c ComplexityRoot
	c.Query.Payments = func(child int, _ *model.PaymentFilter, first *int, _ *string) int {
		n := 20
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Payment.Attempts = func(child int) int { return 1 + listMultiplier*child }
	return c
}
