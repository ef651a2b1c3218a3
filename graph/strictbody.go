package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// notAJSONObject is what a client is told about a body that is not one
// JSON object, by gqlgen's decoder (through tidy) or by bodyProblem.
const notAJSONObject = `the request body must be a JSON object such as {"query": "…", "variables": {…}}`

// requestMembers are the members of a GraphQL-over-HTTP request that
// gqlgen reads, matching their names in any letter case as encoding/json
// does.
var requestMembers = [...]string{"query", "operationName", "variables", "extensions"}

// bodyProblem is why a POST body is not one well-formed JSON object, or ""
// when it is one. gqlgen decodes the body with encoding/json, which stops
// after the first value (`{"query": …} garbage` ran) and keeps the last of
// two members of the same name (of two "query", the second ran), where a
// REST body is refused for either. Invalid UTF-8 is let through, as
// encoding/json lets it, replaced by U+FFFD: a clientId holding it is the
// field's BAD_USER_INPUT (the contract), not a malformed request.
func bodyProblem(body []byte) string {
	dec := decoders.Get().(*jsontext.Decoder)
	defer func() {
		if len(body) <= pooledBodyMax { // its buffer grew to the body: keep only small ones
			dec.Reset(noBody)
			decoders.Put(dec)
		}
	}()
	dec.Reset(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return syntaxProblem(err)
	}
	var seen [len(requestMembers)]bool
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken() // a name given twice is an error here
		if err != nil {
			return syntaxProblem(err)
		}
		if i := requestMember(name.String()); i >= 0 {
			if seen[i] {
				return fmt.Sprintf("the request body gives %q twice (names are matched in any letter case)", requestMembers[i])
			}
			seen[i] = true
		}
		// Skipping a value checks its syntax and names given twice in it,
		// without keeping it.
		if err := dec.SkipValue(); err != nil {
			return syntaxProblem(err)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return syntaxProblem(err)
	}
	if len(bytes.TrimLeft(body[dec.InputOffset():], " \t\n\r")) > 0 { // JSON's whitespace only
		return "the request body must hold one JSON object and nothing after it"
	}
	return ""
}

// decoders keeps bodyProblem's decoders, whose state for names given twice
// is most of what one costs to make.
var decoders = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// pooledBodyMax is the largest body whose decoder goes back to decoders,
// and noBody what a pooled decoder is left reading, so that the pool holds
// neither a large buffer nor a request's body.
const pooledBodyMax = 64 << 10

var noBody = bytes.NewReader(nil)

// syntaxProblem is what a client is told for err, a body's syntax error.
func syntaxProblem(err error) string {
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName) {
		return "the request body gives a member name twice in one object" // not repeated: it is the client's data
	}
	return notAJSONObject
}

// requestMember is the index in requestMembers of name, matched in any
// letter case as encoding/json matches it, or -1.
func requestMember(name string) int {
	for i, member := range requestMembers {
		if strings.EqualFold(name, member) {
			return i
		}
	}
	return -1
}

// oneJSONObject reads r's body whole and answers 400 BAD_REQUEST, as to a
// body that is not JSON, if bodyProblem finds one or the body could not be
// read to its end (false); else it gives the body back to r for gqlgen's
// transport to decode (true), with the error of one over the size limit.
func oneJSONObject(w http.ResponseWriter, r *http.Request) bool {
	// Read into a buffer of the declared length (the body limit caps what
	// is read), not io.ReadAll's doublings from 512 bytes.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), pooledBodyMax)+bytes.MinRead))
	_, err := buf.ReadFrom(r.Body)
	body := buf.Bytes()
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge): // answered as too large where the limit is known
	case err != nil: // cut off, or stalled past the read timeout
		writeProtocolError(w, r, http.StatusBadRequest, "the request body could not be read to its end")
		return false
	default:
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
