package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
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
	problem, _ := readBody(body, nil)
	return problem
}

// readBody checks body as bodyProblem does and, in the same pass, decodes
// it into p when p is not nil, as gqlgen's POST transport would (see
// decodeValue). It says whether p holds the request (decoded); when it
// does not (a member of a type gqlgen refuses, with its own words, or a
// string that needed mending), gqlgen's transport is left to decode it.
func readBody(body []byte, p *graphql.RawParams) (problem string, decoded bool) {
	dec := decoders.Get().(*jsontext.Decoder)
	defer func() {
		if len(body) <= pooledBodyMax { // its buffer grew to the body: keep only small ones
			dec.Reset(noBody)
			decoders.Put(dec)
		}
	}()
	dec.Reset(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return syntaxProblem(err), false
	}
	decoded = p != nil
	var seen [len(requestMembers)]bool
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken() // a name given twice is an error here
		if err != nil {
			return syntaxProblem(err), false
		}
		i := requestMember(name.String())
		if i >= 0 {
			if seen[i] {
				return fmt.Sprintf("the request body gives %q twice (names are matched in any letter case)", requestMembers[i]), false
			}
			seen[i] = true
		}
		if decoded && i >= 0 {
			ok, err := decodeMember(dec, p, i)
			if err != nil {
				return syntaxProblem(err), false
			}
			decoded = ok
			continue
		}
		// Skipping a value checks its syntax and names given twice in it,
		// without keeping it.
		if err := dec.SkipValue(); err != nil {
			return syntaxProblem(err), false
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return syntaxProblem(err), false
	}
	if len(bytes.TrimLeft(body[dec.InputOffset():], " \t\n\r")) > 0 { // JSON's whitespace only
		return "the request body must hold one JSON object and nothing after it", false
	}
	return "", decoded
}

// decodeMember decodes the value of requestMembers[i] into p: a string
// for query and operationName, an object for variables and extensions, or
// null for any (which encoding/json leaves as it was). Of any other kind
// it is skipped and false returned: gqlgen refuses it in its own words.
func decodeMember(dec *jsontext.Decoder, p *graphql.RawParams, i int) (bool, error) {
	kind := dec.PeekKind()
	if kind == 'n' {
		_, err := dec.ReadToken()
		return true, err
	}
	switch {
	case i <= 1 && kind == '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return false, err
		}
		s := tok.String()
		if i == 0 {
			p.Query = s
		} else {
			p.OperationName = s
		}
		return !mended(s), nil
	case i >= 2 && kind == '{':
		v, ok, err := decodeValue(dec)
		if err != nil || !ok {
			return false, err
		}
		if i == 2 {
			p.Variables = v.(map[string]any)
		} else {
			p.Extensions = v.(map[string]any)
		}
		return true, nil
	}
	return false, dec.SkipValue()
}

// decodeValue decodes the next JSON value as encoding/json decodes into an
// interface with UseNumber, gqlgen's way: objects as map[string]any,
// arrays as []any, numbers as json.Number (their text), strings, bools
// and nil. It says false, having read the value, for a string holding
// U+FFFD: the two decoders may not mend invalid UTF-8 or a lone surrogate
// alike, so such a body is left to encoding/json.
func decodeValue(dec *jsontext.Decoder) (any, bool, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		m, ok := map[string]any{}, true
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, false, err
			}
			k := name.String() // before the next read, which voids name
			v, okV, err := decodeValue(dec)
			if err != nil {
				return nil, false, err
			}
			m[k], ok = v, ok && okV && !mended(k)
		}
		_, err := dec.ReadToken() // '}', or the syntax error
		return m, ok, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		a, ok := []any{}, true
		for kind := dec.PeekKind(); kind != ']' && kind != 0; kind = dec.PeekKind() {
			v, okV, err := decodeValue(dec)
			if err != nil {
				return nil, false, err
			}
			a, ok = append(a, v), ok && okV
		}
		_, err := dec.ReadToken() // ']', or the syntax error
		return a, ok, err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, false, err
	}
	switch tok.Kind() {
	case '"':
		s := tok.String()
		return s, !mended(s), nil
	case '0':
		return json.Number(tok.String()), true, nil
	case 't', 'f':
		return tok.Bool(), true, nil
	}
	return nil, true, nil // null
}

// mended says whether s holds U+FFFD, what either decoder puts in place of
// what it could not read.
func mended(s string) bool { return strings.ContainsRune(s, utf8.RuneError) }

// decoders keeps readBody's decoders, whose state for names given twice
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
	_, ok := decodeJSONObject(w, r, nil)
	return ok
}

// decodeJSONObject is oneJSONObject that also decodes the body into p,
// when p is not nil, in the same pass (readBody). It says whether p holds
// the request (decoded); if not, r's body is given back for gqlgen's
// transport to decode.
func decodeJSONObject(w http.ResponseWriter, r *http.Request, p *graphql.RawParams) (decoded, ok bool) {
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
		return false, false
	default:
		problem, decoded := readBody(body, p)
		if problem != "" {
			writeProtocolError(w, r, http.StatusBadRequest, problem)
			return false, false
		}
		if decoded {
			return true, true
		}
	}
	r.Body = replayedBody(body, err)
	return false, true
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
