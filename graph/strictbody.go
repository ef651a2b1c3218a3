package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// notAJSONObject is what a client is told about a body that is not one
// JSON object, by gqlgen's decoder (through tidy) or by bodyProblem.
const notAJSONObject = `the request body must be a JSON object such as {"query": "…", "variables": {…}}`

// requestMembers are the members of a GraphQL-over-HTTP request that
// gqlgen reads, matching their names in any letter case as encoding/json
// does.
var requestMembers = []string{"query", "operationName", "variables", "extensions"}

// bodyProblem is why a POST body is not one well-formed JSON object, or ""
// when it is one. gqlgen decodes the body with encoding/json, which stops
// after the first value (`{"query": …} garbage` ran) and keeps the last of
// two members of the same name (of two "query", the second ran), where a
// REST body is refused for either. Invalid UTF-8 is let through, as
// encoding/json lets it, replaced by U+FFFD: a clientId holding it is the
// field's BAD_USER_INPUT (the contract), not a malformed request.
func bodyProblem(body []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true))
	value, err := dec.ReadValue() // checks syntax and names given twice
	if err != nil {
		var syn *jsontext.SyntacticError
		if errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName) {
			return "the request body gives a member name twice in one object" // not repeated: it is the client's data
		}
		return notAJSONObject
	}
	if value.Kind() != '{' {
		return notAJSONObject
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return "the request body must hold one JSON object and nothing after it"
	}
	return twiceNamedMember(value)
}

// twiceNamedMember says which of requestMembers object, a well-formed JSON
// object, gives twice in two letter cases ("query" and "Query"), or "".
func twiceNamedMember(object jsontext.Value) string {
	dec := jsontext.NewDecoder(bytes.NewReader(object), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadToken(); err != nil { // '{'
		return notAJSONObject
	}
	seen := map[string]bool{}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return notAJSONObject
		}
		for _, member := range requestMembers {
			if !strings.EqualFold(name.String(), member) {
				continue
			}
			if seen[member] {
				return fmt.Sprintf("the request body gives %q twice (names are matched in any letter case)", member)
			}
			seen[member] = true
		}
		if err := dec.SkipValue(); err != nil {
			return notAJSONObject
		}
	}
	return ""
}

// oneJSONObject reads r's body whole and answers 400 BAD_REQUEST, as to a
// body that is not JSON, if bodyProblem finds one (false); else it gives
// the body back to r for gqlgen's transport to decode (true).
func oneJSONObject(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		if problem := bodyProblem(body); problem != "" {
			writeProtocolError(w, r, http.StatusBadRequest, problem)
			return false
		}
	}
	r.Body = replayedBody(body, err)
	return true
}

// replayedBody is a request body read whole, then given to gqlgen again
// with the error reading it ended with, if any.
func replayedBody(body []byte, err error) io.ReadCloser {
	if err == nil {
		return io.NopCloser(bytes.NewReader(body))
	}
	return io.NopCloser(io.MultiReader(bytes.NewReader(body), failingReader{err}))
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
