package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/apierror"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// getTransport is gqlgen's GET transport, except that a mutation sent by GET
// is answered 405 Method Not Allowed with a coded error, as GraphQL over
// HTTP asks, instead of gqlgen's uncoded 406; and its statuses follow the
// spec's SHOULDs (see specStatus).
type getTransport struct{ transport.GET }

func (t getTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if op := requestedOperation(r); op == ast.Mutation || op == ast.Subscription {
		w.Header().Set("Allow", "POST")
		writeProtocolError(w, r, http.StatusMethodNotAllowed, "a "+string(op)+" must be sent with POST; GET is for queries only")
		return
	}
	sw := &specStatus{ResponseWriter: w}
	t.GET.Do(sw, r, exec)
	sw.flush()
}

// postTransport is gqlgen's POST transport with the spec's SHOULDs on
// statuses (see specStatus), taking only a body that is one well-formed
// JSON object (see bodyProblem). The body is decoded in the pass that
// checks it and the operation run here as gqlgen's transport runs it
// (servePost). A body that pass leaves undecoded goes to gqlgen's
// transport: one with a member of a type gqlgen refuses, which it refuses
// in its own words, and one with a string holding U+FFFD, which it decodes
// and runs (see readBody).
type postTransport struct{ transport.POST }

// Supports is gqlgen's test, without parsing the Content-Type a client
// nearly always sends as it is: application/json, nothing more.
func (t postTransport) Supports(r *http.Request) bool {
	if r.Header.Get("Content-Type") == "application/json" && r.Header.Get("Upgrade") == "" {
		return r.Method == http.MethodPost
	}
	return t.POST.Supports(r)
}

func (t postTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	start := graphql.Now()
	params := new(graphql.RawParams)
	decoded, ok := decodeJSONObject(w, r, params)
	if !ok {
		return
	}
	sw := &specStatus{ResponseWriter: w}
	if decoded {
		params.Headers = r.Header
		params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
		servePost(sw, r, exec, params)
	} else {
		t.POST.Do(sw, r, exec)
	}
	sw.flush()
}

// servePost runs a decoded POST request as gqlgen's POST transport (with no
// headers of its own configured) runs the one it decodes, and answers it.
func servePost(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor, params *graphql.RawParams) {
	ctx := r.Context()
	contentType := responseContentType(r)
	w.Header().Add("Content-Type", contentType)
	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		status := http.StatusOK
		if errcode.GetErrorKind(opErr) == errcode.KindProtocol {
			status = http.StatusUnprocessableEntity
			if contentType == graphqlResponseJSON {
				status = http.StatusBadRequest
			}
		}
		w.WriteHeader(status)
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeResponse(w, responses(ctx))
}

const graphqlResponseJSON = "application/graphql-response+json"

// responseContentType is the media type of the answer as gqlgen's POST
// transport picks it: application/json unless the first media type of
// Accept it knows is application/graphql-response+json, or none is known.
func responseContentType(r *http.Request) string {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return "application/json"
	}
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "*/*", "application/*", "application/json":
			return "application/json"
		case graphqlResponseJSON:
			return graphqlResponseJSON
		}
	}
	return graphqlResponseJSON
}

// writeResponse writes resp as json.Marshal writes it, as gqlgen does. An
// answer of data alone, already compact and with nothing that
// encoding/json escapes, is written as it is, without a copy.
func writeResponse(w io.Writer, resp *graphql.Response) {
	if resp != nil && len(resp.Errors) == 0 && resp.Label == "" && resp.Path == nil && resp.HasNext == nil &&
		resp.Extensions == nil && len(resp.Data) > 0 && plainJSON(resp.Data) {
		buf := make([]byte, 0, len(`{"data":}`)+len(resp.Data))
		buf = append(append(append(buf, `{"data":`...), resp.Data...), '}')
		_, _ = w.Write(buf)
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		panic(fmt.Errorf("unable to marshal %s: %w", string(resp.Data), err))
	}
	_, _ = w.Write(b)
}

// plainJSON says whether data holds none of what json.Marshal changes in
// a json.RawMessage: whitespace, which it removes, and <, >, & and U+2028
// and U+2029 (whose UTF-8 starts with 0xE2), which it escapes.
func plainJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return true
}

// specStatus adjusts gqlgen's answers to requests that fail before they
// execute, as GraphQL over HTTP says they SHOULD be:
//   - a malformed request (code BAD_REQUEST: no query) gets 400;
//   - under application/json, a document that fails to parse or validate,
//     or variables that fail to coerce, get 200 (gqlgen says 422), since
//     legacy clients read errors only from 200 responses;
//   - under application/graphql-response+json such failures keep gqlgen's
//     4xx;
//   - under either, the answer loses the "data" entry (gqlgen writes
//     "data": null): the request never executed, and the GraphQL spec says
//     that an error raised before execution leaves data out.
//
// Only error answers (status 400 and up) are held back and rewritten.
type specStatus struct {
	http.ResponseWriter
	status int // the held-back status, 0 while passing through
	body   bytes.Buffer
}

func (w *specStatus) WriteHeader(code int) {
	if code >= 400 {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *specStatus) Write(b []byte) (int, error) {
	if w.status != 0 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *specStatus) flush() {
	if w.status == 0 {
		return
	}
	var resp struct {
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(w.body.Bytes(), &resp) != nil || json.Unmarshal(w.body.Bytes(), &raw) != nil {
		w.ResponseWriter.WriteHeader(w.status)
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
		return
	}
	status := w.status
	badRequest := slices.ContainsFunc(resp.Errors, func(e struct{ Extensions struct{ Code string } }) bool {
		return e.Extensions.Code == apierror.BadRequest || e.Extensions.Code == ""
	})
	if codeless := slices.ContainsFunc(resp.Errors, func(e struct{ Extensions struct{ Code string } }) bool {
		return e.Extensions.Code == ""
	}); codeless {
		raw["errors"] = codedErrors(raw["errors"])
	}
	contentType := w.Header().Get("Content-Type")
	switch {
	case badRequest:
		status = http.StatusBadRequest
	case status == http.StatusUnprocessableEntity && strings.HasPrefix(contentType, "application/json"):
		status = http.StatusOK
	}
	delete(raw, "data")
	w.ResponseWriter.WriteHeader(status)
	_ = json.NewEncoder(w.ResponseWriter).Encode(raw)
}

// codedErrors gives the errors gqlgen's GET transport writes itself,
// without the error presenter, the code BAD_REQUEST and fixed words: one
// of them repeats a piece of the URL.
func codedErrors(raw json.RawMessage) json.RawMessage {
	var errs []map[string]any
	if json.Unmarshal(raw, &errs) != nil {
		return raw
	}
	for _, e := range errs {
		if ext, _ := e["extensions"].(map[string]any); ext["code"] != nil {
			continue
		}
		switch e["message"] {
		case "variables could not be decoded":
			e["message"] = "the variables parameter is not a JSON object"
		case "extensions could not be decoded":
			e["message"] = "the extensions parameter is not a JSON object"
		default:
			e["message"] = "the URL's query string is malformed"
		}
		e["extensions"] = map[string]any{"code": apierror.BadRequest}
	}
	out, err := json.Marshal(errs)
	if err != nil {
		return raw
	}
	return out
}

// requireQuery refuses a request that carries no query (and no persisted
// query hash) as a malformed request, before parsing: a typo such as
// {"qeury": …} is not a GraphQL document that failed validation.
type requireQuery struct{}

func (requireQuery) ExtensionName() string                   { return "RequireQuery" }
func (requireQuery) Validate(graphql.ExecutableSchema) error { return nil }

func (requireQuery) MutateOperationParameters(_ context.Context, p *graphql.RawParams) *gqlerror.Error {
	if strings.TrimSpace(p.Query) != "" {
		return nil
	}
	if _, persisted := p.Extensions["persistedQuery"]; persisted {
		return nil
	}
	err := gqlerror.Errorf(`the request has no query: send {"query": "…"}`)
	errcode.Set(err, apierror.BadRequest)
	return err
}

// requestedOperation is the kind of operation a GET request selects, or ""
// when that cannot be told (the executor then reports why).
func requestedOperation(r *http.Request) ast.Operation {
	q := r.URL.Query()
	doc, err := parser.ParseQuery(&ast.Source{Input: q.Get("query")})
	if err != nil {
		return ""
	}
	op := doc.Operations.ForName(q.Get("operationName"))
	if op == nil {
		return ""
	}
	return op.Operation
}

// unsupportedTransport comes last and takes every request no other
// transport supports, answering it with a coded error instead of gqlgen's
// uncoded "transport not supported".
type unsupportedTransport struct{}

func (unsupportedTransport) Supports(*http.Request) bool { return true }

func (unsupportedTransport) Do(w http.ResponseWriter, r *http.Request, _ graphql.GraphExecutor) {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodOptions:
		writeProtocolError(w, r, http.StatusUnsupportedMediaType,
			"send the request as application/json (POST) or in the URL (GET)")
	default:
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		writeProtocolError(w, r, http.StatusMethodNotAllowed, r.Method+" is not supported; use POST, or GET for queries")
	}
}

// writeProtocolError answers a request that never reached the executor.
func writeProtocolError(w http.ResponseWriter, r *http.Request, status int, message string) {
	contentType := "application/json"
	if accept := r.Header.Get("Accept"); strings.Contains(accept, "application/graphql-response+json") &&
		!strings.Contains(accept, "application/json") {
		contentType = "application/graphql-response+json"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"message": message, "extensions": map[string]any{"code": apierror.BadRequest}}},
	})
}

// operationName names an operation by its root fields ("createPayment",
// "payment+payments"): a small, fixed set, fit for a metrics label.
func operationName(rc *graphql.OperationContext) string {
	if rc == nil || rc.Operation == nil {
		return "unknown"
	}
	var names []string
	for _, sel := range rc.Operation.SelectionSet {
		if f, ok := sel.(*ast.Field); ok && !slices.Contains(names, f.Name) {
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return "unknown"
	}
	slices.Sort(names)
	return strings.Join(names, "+")
}
