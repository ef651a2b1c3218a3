package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/cmpay/cmpay/graph/scalar"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// strictVariables finishes variable coercion where gqlparser's is lenient,
// before anything runs, as the spec's CoerceVariableValues does:
//
//   - a String takes only a JSON string. The transports decode numbers as
//     json.Number, a string type, so gqlparser let "idempotencyKey": 12
//     through and gqlgen made it the key "12".
//   - an ID takes a JSON string or an integer, as the spec says: gqlparser
//     took any number, so "clientId": 1.5 made a payment for client "1.5".
//   - an Int takes only a JSON number, whole and of 32 bits: gqlparser
//     took the string "5", and "99999999999" skipped the range check.
//   - a Decimal takes only a string or a JSON number, as its scalar does.
//   - an enum takes only one of its values, spelt exactly. gqlparser
//     compares case-insensitively, so "pix" passed, and gqlgen's lookup of
//     PIX's Go value then gave "" and the domain the message `method ""`.
//
// Values nested in input objects and lists are checked too. A refusal is a
// variable error like gqlparser's (GRAPHQL_VALIDATION_FAILED, path
// ["variable", …]) that says what the type takes, never the value received:
// error messages do not echo the request.
type strictVariables struct{ schema *ast.Schema }

func (strictVariables) ExtensionName() string                   { return "StrictVariables" }
func (strictVariables) Validate(graphql.ExecutableSchema) error { return nil }

func (s strictVariables) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil {
		return nil
	}
	for _, def := range opCtx.Operation.VariableDefinitions {
		v, ok := opCtx.Variables[def.Variable]
		if !ok {
			continue
		}
		if bad := s.check(v, def.Type); bad != nil {
			path := ast.Path{ast.PathName("variable"), ast.PathName(def.Variable)}
			for i := len(bad.reversePath) - 1; i >= 0; i-- {
				path = append(path, bad.reversePath[i])
			}
			err := gqlerror.ErrorPathf(path, "%s", bad.message)
			errcode.Set(err, errcode.ValidationFailed)
			return err
		}
	}
	return nil
}

// badValue is a value check refused: why, and where below the variable,
// innermost first (the path is built only for a refusal).
type badValue struct {
	message     string
	reversePath []ast.PathElement
}

func (b *badValue) at(p ast.PathElement) *badValue {
	b.reversePath = append(b.reversePath, p)
	return b
}

func (s strictVariables) check(v any, t *ast.Type) *badValue {
	if v == nil || t == nil {
		return nil // nullability is gqlparser's to check
	}
	if t.Elem != nil {
		// Any slice: gqlparser makes a single value a list of one of its own
		// type ([]string for "PAYMENT_CREATED"), not a []any.
		list := reflect.ValueOf(v)
		if list.Kind() != reflect.Slice {
			return s.check(v, t.Elem) // one value stands for a list of one
		}
		for i := range list.Len() {
			if bad := s.check(list.Index(i).Interface(), t.Elem); bad != nil {
				return bad.at(ast.PathIndex(i))
			}
		}
		return nil
	}
	def := s.schema.Types[t.NamedType]
	if def == nil {
		return nil
	}
	switch def.Kind {
	case ast.Scalar:
		switch def.Name {
		case "Decimal":
			// The scalar refuses an object, a boolean or a list only when its
			// field runs, after the mutation's earlier root fields have.
			var d scalar.Decimal
			if err := d.UnmarshalGQL(v); err != nil {
				return &badValue{message: err.Error()}
			}
		case "String":
			if _, ok := v.(string); !ok {
				return &badValue{message: "a String must be a JSON string, not " + scalar.JSONKind(v)}
			}
		case "ID":
			if !idValue(v) {
				return &badValue{message: "an ID must be a JSON string or an integer, not " + numberWords(v)}
			}
		case "Int":
			// The spec's Int is 32 bits; gqlparser took any int64, and a
			// huge first: reached the complexity limit as the error. It
			// also took a numeric string ("5"), which the spec refuses.
			if _, ok := v.(string); ok {
				return &badValue{message: intRange + ", not a string"}
			}
			if !int32Value(v) {
				return &badValue{message: intRange}
			}
		}
	case ast.Enum:
		name, _ := v.(string)
		if def.EnumValues.ForName(name) == nil {
			return &badValue{message: enumRefusal(def, name)}
		}
	case ast.InputObject:
		fields, ok := v.(map[string]any)
		if !ok {
			return nil // gqlparser refused it already
		}
		for _, f := range def.Fields {
			if fv, ok := fields[f.Name]; ok {
				if bad := s.check(fv, f.Type); bad != nil {
					return bad.at(ast.PathName(f.Name))
				}
			}
		}
	}
	return nil
}

// int32Value reports whether v, a variable's value as the transports
// decoded it and gqlparser coerced it, is a 32-bit Int. Other kinds are
// gqlparser's to refuse.
func int32Value(v any) bool {
	switch n := v.(type) {
	case json.Number:
		_, err := strconv.ParseInt(string(n), 10, 32)
		return err == nil
	case int64:
		return n >= math.MinInt32 && n <= math.MaxInt32
	case int:
		return n >= math.MinInt32 && n <= math.MaxInt32
	}
	return true
}

// idValue reports whether v, a variable's value as the transports decoded
// it, may be an ID: a string or a number written as an integer (digits,
// no fraction or exponent, any size). Other kinds are gqlparser's to
// refuse.
func idValue(v any) bool {
	switch n := v.(type) {
	case json.Number:
		digits := strings.TrimPrefix(string(n), "-")
		return digits != "" && strings.Trim(digits, "0123456789") == ""
	case float64:
		return n == math.Trunc(n) && !math.IsInf(n, 0)
	}
	return true
}

// numberWords says what kind of number an ID refused: never the value,
// which is the client's (error messages do not echo the request).
func numberWords(v any) string {
	if n, ok := v.(json.Number); ok && strings.ContainsAny(string(n), "eE") {
		return "a number with an exponent"
	}
	return "a number with a fraction"
}

// intRange is what an Int variable must be.
const intRange = "an Int must be a whole number from -2147483648 to 2147483647"

func enumNames(def *ast.Definition) string {
	names := make([]string, len(def.EnumValues))
	for i, v := range def.EnumValues {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// enumRefusal is what a value that is not one of enum def's values is
// told: the values it takes, and the one it may have meant in another
// letter case, but not the value itself (error messages do not echo the
// request).
func enumRefusal(def *ast.Definition, value string) string {
	return fmt.Sprintf("the value is not a valid %s: use one of %s %s", def.Name, enumNames(def), enumCaseNote(def, value))
}

// maxQuoted is the longest quoted text or path name a message keeps whole.
const maxQuoted = 40

func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
