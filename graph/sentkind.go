package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/graph/scalar"
)

// sentVariables keeps the variables of a request as the transport decoded
// them, for nameSentKind. gqlgen keeps only the coerced variables, and
// none when coercion fails, which is when they are needed.
type sentVariables struct{}

// sentVariablesStat is where sentVariables keeps them: the operation
// context's Stats, the one place gqlgen gives extensions that outlives a
// failed coercion and reaches the error presenter.
const sentVariablesStat = "CMPaySentVariables"

func (sentVariables) ExtensionName() string                   { return "SentVariables" }
func (sentVariables) Validate(graphql.ExecutableSchema) error { return nil }

func (sentVariables) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if graphql.HasOperationContext(ctx) {
		graphql.GetOperationContext(ctx).Stats.SetExtension(sentVariablesStat, p.Variables)
	}
	return nil
}

// nameSentKind makes gqlparser's refusal of a variable's value name the
// JSON type the client sent. gqlparser names the Go kind the value was
// decoded to, and the transports decode a JSON number as a json.Number, of
// kind string: {"f": 1} for a Boolean was refused as "cannot use a string
// as Boolean". Messages it leaves alone are tidy's to reword.
func nameSentKind(ctx context.Context, e *gqlerror.Error) {
	if len(e.Path) < 2 || e.Path[0] != ast.PathName("variable") {
		return
	}
	wrong := wrongKind.FindStringSubmatch(e.Message)
	object := notAnObject.FindStringSubmatch(e.Message)
	if wrong == nil && object == nil {
		return
	}
	v, ok := sentValue(ctx, e.Path[1:])
	if !ok {
		return
	}
	if wrong != nil {
		e.Message = fmt.Sprintf("cannot use %s as %s", scalar.JSONKind(v), wrong[2])
	} else {
		e.Message = fmt.Sprintf("must be a %s object, not %s", object[1], scalar.JSONKind(v))
	}
}

// sentValue is the value the client sent at path, below "variable": the
// variable's name, then names of input fields and list indexes.
func sentValue(ctx context.Context, path ast.Path) (any, bool) {
	if !graphql.HasOperationContext(ctx) {
		return nil, false
	}
	vars, ok := graphql.GetOperationContext(ctx).Stats.GetExtension(sentVariablesStat).(map[string]any)
	if !ok {
		return nil, false
	}
	var v any = vars
	for _, step := range path {
		switch step := step.(type) {
		case ast.PathName:
			fields, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = fields[string(step)]; !ok {
				return nil, false
			}
		case ast.PathIndex:
			list, ok := v.([]any)
			switch {
			case ok && int(step) >= 0 && int(step) < len(list):
				v = list[step]
			case !ok && step == 0:
				// A single value stands for a list of one.
			default:
				return nil, false
			}
		}
	}
	return v, true
}
