package graph

import (
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// keepDecimalLiterals makes a number literal written for a Decimal in the
// query text (`amount: 10.50`) reach the scalar as its text ("10.50").
//
// gqlparser would otherwise coerce it with strconv.ParseFloat before any
// scalar sees it, and the contract forbids binary floating point anywhere
// on an amount's path. This is the one hook where literals are seen with
// their expected type and before coercion: a validation rule. It runs while
// the document is parsed and validated, before gqlgen caches or shares it,
// so the rewrite never races with a reader.
var keepDecimalLiterals = core.Rule{
	Name: "KeepDecimalLiterals",
	RuleFunc: func(observers *core.Events, _ core.AddErrFunc) {
		observers.OnValue(func(_ *core.Walker, value *ast.Value) {
			if value.Definition == nil || value.Definition.Name != "Decimal" {
				return
			}
			if value.Kind == ast.IntValue || value.Kind == ast.FloatValue {
				value.Kind = ast.StringValue
			}
		})
	},
}
