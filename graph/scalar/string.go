package scalar

import (
	"fmt"

	"github.com/99designs/gqlgen/graphql"
)

// MarshalString writes a String; gqlgen.yml binds GraphQL's String to this
// pair of functions.
func MarshalString(s string) graphql.Marshaler { return graphql.MarshalString(s) }

// UnmarshalString takes a String argument or input field strictly, as the
// GraphQL spec's input coercion says: only a string. gqlgen's own
// graphql.UnmarshalString also takes numbers and booleans (12 became "12").
// Variables are refused earlier, before anything runs (graph's
// strictVariables); this keeps every other path strict too.
func UnmarshalString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", &BadValueError{fmt.Sprintf("a String must be a JSON string, not %s", JSONKind(v))}
}
