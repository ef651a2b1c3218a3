package graph

import (
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// int32Literals refuses an Int literal in the query text outside 32 bits,
// as the spec's Int is, in the words gqlparser uses for one outside 64
// bits. gqlparser takes any int64 literal: first: 2147483648 was refused
// only by the complexity limit, as a cost of 4,294,967,327, and
// first: -2147483649 reached the resolver. As a validation rule it runs
// before the complexity is computed, and on the literals of variables'
// default values too; variables themselves are strictVariables' to check.
var int32Literals = core.Rule{
	Name: "Int32Literals",
	RuleFunc: func(observers *core.Events, addError core.AddErrFunc) {
		observers.OnValue(func(_ *core.Walker, value *ast.Value) {
			if value.Kind != ast.IntValue || value.Definition == nil || value.Definition.Name != "Int" {
				return
			}
			if _, err := strconv.ParseInt(value.Raw, 10, 64); err != nil {
				return // gqlparser's ValuesOfCorrectType refuses it already
			}
			if _, err := strconv.ParseInt(value.Raw, 10, 32); err != nil {
				addError(core.Message("Int cannot represent non 32-bit signed integer value: %s", value.Raw),
					core.At(value.Position))
			}
		})
	},
}
