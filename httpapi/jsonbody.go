package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/internal/suggest"
)

// decodeJSONBody reads r's body into dst, a pointer to a struct, strictly,
// the way every REST route reads its body:
//
//   - the body is one JSON object and nothing after it;
//   - Content-Type is application/json (else 415), unless there is no body
//     and bodyOptional allows that (a POST that needs no body, such as a
//     cancel, needs no Content-Type either; dst is then left as it is);
//   - field names match the struct's json tags exactly: a name in another
//     letter case ("Amount"), a name it does not have, or a name given
//     twice is refused (encoding/json would match "AMOUNT" to amount and
//     keep the last of two amounts);
//   - the text is valid UTF-8.
//
// A refusal is an error for bodyProblem, which says what was wrong without
// repeating the body or naming Go types. The body must already be capped
// (limitBody); a body over the cap is reported as such.
func decodeJSONBody(r *http.Request, dst any, bodyOptional bool) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return emptyBody(dst, bodyOptional)
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return &bodyError{status: http.StatusUnsupportedMediaType, code: apierror.UnsupportedMediaType,
			message: "send the body as JSON, with Content-Type: application/json"}
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return &bodyError{status: http.StatusBadRequest, code: apierror.BadUserInput, message: "the body could not be read to its end"}
	}
	if len(trimJSONSpace(data)) == 0 {
		return emptyBody(dst, bodyOptional)
	}
	return unmarshalStrict(data, dst)
}

// trimJSONSpace is b without the whitespace JSON allows around a value:
// space, tab, line feed and carriage return, not bytes.TrimSpace's Unicode
// spaces (U+2028, U+00A0, \v), which are data after the value.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\n\r") }

func emptyBody(dst any, bodyOptional bool) error {
	if bodyOptional {
		return nil
	}
	return badBody("the body is empty: send a JSON object with the fields %s", fieldList(dst))
}

// unmarshalStrict is decodeJSONBody's decoding, for a body already read.
func unmarshalStrict(data []byte, dst any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	value, err := dec.ReadValue() // checks syntax, UTF-8 and duplicated names
	if err != nil {
		return syntaxProblem(err, dst)
	}
	if value.Kind() != '{' {
		if len(jsonFields(dst)) == 0 {
			return badBody(takesNoFields)
		}
		return badBody("the body must be a JSON object with the fields %s", fieldList(dst))
	}
	// Not dec.ReadToken: that would reuse the buffer value points into.
	if len(trimJSONSpace(data[dec.InputOffset():])) > 0 {
		return badBody("the body must hold one JSON object and nothing after it")
	}
	if err := json.Unmarshal(value, dst, json.RejectUnknownMembers(true)); err != nil {
		return semanticProblem(err, dst)
	}
	return nil
}

// bodyError is a body decodeJSONBody refused: the status, code and message
// a client gets.
type bodyError struct {
	status  int
	code    string
	message string
}

func (e *bodyError) Error() string { return e.message }

func badBody(format string, args ...any) *bodyError {
	return &bodyError{status: http.StatusBadRequest, code: apierror.BadUserInput, message: fmt.Sprintf(format, args...)}
}

// bodyProblem is what a client is told about an error of decodeJSONBody:
// 400 BAD_USER_INPUT on the field "body", 415 UNSUPPORTED_MEDIA_TYPE, or
// 413 PAYLOAD_TOO_LARGE.
func bodyProblem(err error) apierror.Error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return apierror.Error{Code: apierror.TooLarge, Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit)}
	}
	var be *bodyError
	if !errors.As(err, &be) {
		be = badBody("the body could not be read")
	}
	if be.status == http.StatusBadRequest {
		return badInput("body", be.message)
	}
	return apierror.Error{Code: be.code, Status: be.status, Message: be.message}
}

// syntaxProblem describes a body that is not one well-formed JSON value.
// Offsets are fine to tell; the text around them is the client's own.
func syntaxProblem(err error, dst any) error {
	var syn *jsontext.SyntacticError
	if !errors.As(err, &syn) {
		return badBody("the body is not valid JSON")
	}
	if errors.Is(syn.Err, jsontext.ErrDuplicateName) {
		if name, ok := knownField(syn.JSONPointer, dst); ok {
			return badBody("the field %s appears more than once", name)
		}
		return badBody("a field appears more than once")
	}
	if errors.Is(syn.Err, io.ErrUnexpectedEOF) {
		return badBody("the body ends before its JSON value does")
	}
	return badBody("the body is not valid JSON (at byte %d)", syn.ByteOffset)
}

// semanticProblem describes a well-formed object that does not fit dst.
func semanticProblem(err error, dst any) error {
	var sem *json.SemanticError
	if !errors.As(err, &sem) {
		return badBody("the body does not fit the fields %s", fieldList(dst))
	}
	if errors.Is(sem.Err, json.ErrUnknownName) {
		return unknownFieldProblem(sem.JSONPointer, dst)
	}
	if name, ok := knownField(sem.JSONPointer, dst); ok {
		if want := jsonKindOf(sem.GoType); want != "" {
			return badBody("the field %s must be %s", name, want)
		}
		return badBody("the field %s has a value it cannot take", name)
	}
	return badBody("the body does not fit the fields %s", fieldList(dst))
}

// plainName is a field name safe to repeat in an error: a short identifier.
// Anything else a client sent as a name is not repeated (error messages do
// not echo the body; a name like this one is the client's typo, not data).
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,39}$`)

// takesNoFields is what a route whose body holds nothing (a cancel) says
// of a body that holds something.
const takesNoFields = "this endpoint takes no fields: send no body, or an empty object {}"

// unknownFieldProblem names a top-level field dst does not take, and the
// field that was probably meant, as GraphQL validation does for a misspelt
// input field.
func unknownFieldProblem(p jsontext.Pointer, dst any) error {
	fields := jsonFields(dst)
	name := p.LastToken()
	if len(fields) == 0 {
		if p.Parent() != "" || !plainName.MatchString(name) {
			return badBody("the body has a field; %s", takesNoFields)
		}
		return badBody("the field %q is not one this endpoint takes; %s", name, takesNoFields)
	}
	if p.Parent() != "" || !plainName.MatchString(name) {
		return badBody("the body has a field this endpoint does not take; it takes %s, spelt exactly so (names are case-sensitive)", fieldList(dst))
	}
	if hint := suggest.DidYouMean(name, fields); hint != "" {
		return badBody("the field %q is not one this endpoint takes.%s Names are case-sensitive; it takes %s", name, hint, fieldList(dst))
	}
	return badBody("the field %q is not one this endpoint takes; it takes %s, spelt exactly so (names are case-sensitive)", name, fieldList(dst))
}

// jsonFields are the JSON names of the struct dst points to, in order.
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

func fieldList(dst any) string { return strings.Join(jsonFields(dst), ", ") }

// knownField is the top-level field a JSON pointer is in, if it is one of
// dst's: only names of our own are repeated back to the client.
func knownField(p jsontext.Pointer, dst any) (string, bool) {
	first, _, _ := strings.Cut(strings.TrimPrefix(string(p), "/"), "/")
	for _, name := range jsonFields(dst) {
		if name == first {
			return name, true
		}
	}
	return "", false
}

// jsonKindOf names, in JSON's words, what a Go type accepts.
func jsonKindOf(t reflect.Type) string {
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return ""
}
