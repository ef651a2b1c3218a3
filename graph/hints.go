package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/internal/suggest"
)

// enumCaseNote is the parenthesis after an enum refusal: values are
// case-sensitive, and the value meant when v differs from one only in case.
func enumCaseNote(def *ast.Definition, v string) string {
	names := make([]string, len(def.EnumValues))
	for i, e := range def.EnumValues {
		names[i] = e.Name
	}
	if meant, ok := suggest.CaseOnly(v, names); ok {
		return "(enum values are case-sensitive: did you mean " + meant + "?)"
	}
	return "(enum values are case-sensitive)"
}

// suggestVariableField gives gqlparser's bare "unknown field" about a
// variable's input object the words and the "Did you mean" its validation
// gives the same typo written inline. The error's path is the variable's
// "variable", the variable's name, then the fields (and list indexes) down
// to the unknown one; the operation, on ctx, gives the variable's type.
func suggestVariableField(ctx context.Context, e *gqlerror.Error) {
	if e.Message != "unknown field" || len(e.Path) < 3 || e.Path[0] != ast.PathName("variable") ||
		!graphql.HasOperationContext(ctx) {
		return
	}
	op := graphql.GetOperationContext(ctx).Operation
	variable, ok := e.Path[1].(ast.PathName)
	if op == nil || !ok {
		return
	}
	vd := op.VariableDefinitions.ForName(string(variable))
	if vd == nil {
		return
	}
	def := parsedSchema.Types[vd.Type.Name()]
	for _, step := range e.Path[2 : len(e.Path)-1] {
		name, ok := step.(ast.PathName)
		if !ok {
			continue // a list index: the same type
		}
		if def == nil {
			return
		}
		f := def.Fields.ForName(string(name))
		if f == nil {
			return
		}
		def = parsedSchema.Types[f.Type.Name()]
	}
	unknown, ok := e.Path[len(e.Path)-1].(ast.PathName)
	if def == nil || def.Kind != ast.InputObject || !ok {
		return
	}
	names := make([]string, len(def.Fields))
	for i, f := range def.Fields {
		names[i] = f.Name
	}
	e.Message = fmt.Sprintf("Field %q is not defined by type %q.%s", string(unknown), def.Name, suggest.DidYouMean(string(unknown), names))
}
