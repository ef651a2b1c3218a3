package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/graph/scalar"
	"github.com/cmpay/cmpay/requestid"
)

// presentError turns every error of a GraphQL response into one with an
// extensions.code. Errors gqlgen classified (GRAPHQL_PARSE_FAILED,
// GRAPHQL_VALIDATION_FAILED, COMPLEXITY_LIMIT_EXCEEDED) pass through;
// gqlgen's words about a malformed request become BAD_REQUEST; everything
// else is classified by apierror, the mapping REST uses too.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)

	var badValue *scalar.BadValueError
	var own *gqlerror.Error
	domain := false
	switch {
	case errors.As(err, &badValue):
		gqlErr.Extensions = map[string]any{"code": apierror.BadUserInput}
	case gqlErr.Rule == maxFieldsRuleName:
		// A validation rule's error, which gqlgen marks as failed
		// validation, for a document too costly to run.
		gqlErr.Extensions = map[string]any{"code": codeTooComplex}
	case gqlErr.Extensions["code"] != nil:
		// Already classified by gqlgen.
	case errors.As(err, &own) && own.Unwrap() == nil && len(own.Path) == 0:
		// gqlgen's own words about the request as a whole: a body that is
		// not JSON, a missing query, an unknown operation name.
		gqlErr.Extensions = map[string]any{"code": apierror.BadRequest}
	default:
		domain = true
		e := apierror.FromDomain(ctx, err)
		gqlErr.Message = e.Message
		gqlErr.Extensions = map[string]any{"code": e.Code}
		for k, v := range e.Details {
			gqlErr.Extensions[k] = v
		}
	}
	nameSentKind(ctx, gqlErr)
	suggestVariableField(ctx, gqlErr)
	tidy(gqlErr, !domain)
	return gqlErr
}

// Messages of gqlgen and gqlparser that repeat what the client sent (the
// whole body, an operation name) or name Go types and kinds, and what they
// become.
var (
	undecodableBody  = regexp.MustCompile(`^json request body could not be decoded`)
	unreadableBody   = regexp.MustCompile(`^could not read request body`)
	unknownOperation = regexp.MustCompile(`^operation (.*) not found$`)
	notAnObject      = regexp.MustCompile(`^must be a (\w+), not an? (\w+)$`)
	wrongKind        = regexp.MustCompile(`^cannot use (\w+) as (\w+)$`)
	notAnInt         = regexp.MustCompile(`^cannot use value .* as Int$`)
	notAnEnumValue   = regexp.MustCompile(`(?s)^(.*) is not a valid (\w+)$`)
	// gqlparser's words for a literal of the wrong kind or an unknown enum
	// value, each quoting the literal.
	literalNotInEnum = regexp.MustCompile(`(?s)^Value "(.*)" does not exist in "(\w+)!?" enum\.`)
	literalNotEnum   = regexp.MustCompile(`(?s)^Enum "(\w+)!?" cannot represent non-enum value: `)
	literalNotScalar = regexp.MustCompile(`(?s)^(\w+) cannot represent (.*?) value: `)
	literalExpected  = regexp.MustCompile(`(?s)^Expected value of type "([^"]+)", found `)
	quoted           = regexp.MustCompile(`"[^"]*"`)
)

// maxMessage caps a message: a conflict between deeply nested fields can
// describe itself at length.
const maxMessage = 1000

// tidy gives fixed words to messages that would repeat the request or name
// Go's types, cuts long quoted values and path names short, and caps the
// message's length. Only gqlgen's and gqlparser's messages (theirs) are
// reworded: a domain error's is CMPay's own (apierror), and matching it
// against every pattern below took two thirds of presenting it
// (BenchmarkPresentKeyReused).
func tidy(e *gqlerror.Error, theirs bool) {
	m := e.Message
	switch {
	case !theirs:
	case undecodableBody.MatchString(m):
		m = notAJSONObject
	case unreadableBody.MatchString(m):
		m = "the request body could not be read"
	case unknownOperation.MatchString(m):
		if unknownOperation.FindStringSubmatch(m)[1] == "" {
			m = "the document has several operations: name the one to run in operationName"
		} else {
			m = "operationName names no operation of the document"
		}
	case notAnObject.MatchString(m):
		parts := notAnObject.FindStringSubmatch(m)
		m = fmt.Sprintf("must be a %s object, not %s", parts[1], kindWords(parts[2]))
	case notAnInt.MatchString(m):
		// gqlparser's words for 1.5 or 1e2 ("cannot use value 0 as Int").
		m = intRange
	case wrongKind.MatchString(m):
		parts := wrongKind.FindStringSubmatch(m)
		m = fmt.Sprintf("cannot use %s as %s", kindWords(parts[1]), parts[2])
	case notAnEnumValue.MatchString(m):
		parts := notAnEnumValue.FindStringSubmatch(m)
		m = notInEnum(parts[2], parts[1])
	case literalNotInEnum.MatchString(m):
		parts := literalNotInEnum.FindStringSubmatch(m)
		m = notInEnum(parts[2], parts[1])
	case literalNotEnum.MatchString(m):
		m = notInEnum(literalNotEnum.FindStringSubmatch(m)[1], "")
	case literalNotScalar.MatchString(m):
		parts := literalNotScalar.FindStringSubmatch(m)
		m = fmt.Sprintf("%s cannot represent %s value", parts[1], parts[2])
	case literalExpected.MatchString(m):
		m = fmt.Sprintf("expected a value of type %s", literalExpected.FindStringSubmatch(m)[1])
	case m == "enums must be ints or strings":
		m = "an enum value must be a string"
	}
	m = quoted.ReplaceAllStringFunc(m, func(q string) string {
		if len(q) <= maxQuoted+2 {
			return q
		}
		return `"` + clip(q[1:len(q)-1]) + `"`
	})
	if len(m) > maxMessage {
		cut := maxMessage
		for cut > 0 && !isRuneStart(m[cut]) {
			cut--
		}
		m = m[:cut] + "… (cut short)"
	}
	e.Message = m
	for i, p := range e.Path {
		if name, ok := p.(ast.PathName); ok && len(name) > maxQuoted {
			e.Path[i] = ast.PathName(clip(string(name)))
		}
	}
}

// notInEnum is what a value that is not one of the enum typ's values is
// told, without the value (enumRefusal).
func notInEnum(typ, value string) string {
	if def := parsedSchema.Types[typ]; def != nil && def.Kind == ast.Enum {
		return enumRefusal(def, value)
	}
	return "the value is not a valid " + typ
}

// kindWords names a Go reflect.Kind, as gqlparser reports it, in JSON's
// words.
func kindWords(kind string) string {
	switch kind {
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "a list"
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return "a value of another kind"
}

// recoverPanic turns a resolver panic into an internal error; the stack goes
// to the log, not to the client.
func recoverPanic(ctx context.Context, p any) error {
	slog.ErrorContext(ctx, "panic in resolver", "request_id", requestid.From(ctx), "panic", p, "stack", string(debug.Stack()))
	return errors.New("panic in resolver")
}
