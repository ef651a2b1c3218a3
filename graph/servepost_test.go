package graph

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// answerExec is a GraphExecutor that answers every operation with resp, or
// refuses it with errs before it runs.
type answerExec struct {
	resp *graphql.Response
	errs gqlerror.List
}

func (e answerExec) CreateOperationContext(_ context.Context, p *graphql.RawParams) (
	*graphql.OperationContext, gqlerror.List,
) {
	if e.errs != nil {
		return nil, e.errs
	}
	return &graphql.OperationContext{RawQuery: p.Query}, nil
}

func (e answerExec) DispatchOperation(ctx context.Context, _ *graphql.OperationContext) (
	graphql.ResponseHandler, context.Context,
) {
	return graphql.OneShot(e.resp), ctx
}

func (e answerExec) DispatchError(_ context.Context, errs gqlerror.List) *graphql.Response {
	return &graphql.Response{Errors: errs}
}

// servePost answers a decoded body as gqlgen's POST transport answers the
// same body: status, headers and bytes, whatever the Accept header, for
// answers the fast path writes itself and those it leaves to json.Marshal,
// and for operations refused before they run, as a protocol error or not.
func TestServePostAnswersAsGqlgen(t *testing.T) {
	t.Parallel()
	protocol := gqlerror.Errorf("no such field")
	errcode.Set(protocol, errcode.ValidationFailed)
	other := gqlerror.Errorf("something else")
	yes := true
	execs := map[string]answerExec{
		"plain data":          {resp: &graphql.Response{Data: json.RawMessage(`{"__typename":"Query","n":[1,2.5e3,null]}`)}},
		"data with <":         {resp: &graphql.Response{Data: json.RawMessage(`{"a":"<"}`)}},
		"data with >":         {resp: &graphql.Response{Data: json.RawMessage(`{"a":">"}`)}},
		"data with &":         {resp: &graphql.Response{Data: json.RawMessage(`{"a":"&"}`)}},
		"data with U+2028":    {resp: &graphql.Response{Data: json.RawMessage("{\"a\":\"x\u2028y\u2029\"}")}},
		"data with a space":   {resp: &graphql.Response{Data: json.RawMessage(`{ "a":1}`)}},
		"data with a newline": {resp: &graphql.Response{Data: json.RawMessage("{\"a\":\n1}")}},
		"null data":           {resp: &graphql.Response{Data: json.RawMessage(`null`)}},
		"no data":             {resp: &graphql.Response{}},
		"data and errors":     {resp: &graphql.Response{Data: json.RawMessage(`{"a":null}`), Errors: gqlerror.List{other}}},
		"extensions":          {resp: &graphql.Response{Data: json.RawMessage(`{}`), Extensions: map[string]any{}}},
		"has next":            {resp: &graphql.Response{Data: json.RawMessage(`{}`), HasNext: &yes, Label: "l"}},
		"nil response":        {},
		"protocol error":      {errs: gqlerror.List{protocol}},
		"other error":         {errs: gqlerror.List{other}},
	}
	accepts := []string{"", "application/json", "application/graphql-response+json", "*/*", "application/*",
		"application/graphql-response+json, application/json", "application/json;q=0.5, application/graphql-response+json",
		"text/html", "text/html, application/graphql-response+json", "text/html;;, application/json", "a/b/c"}
	const body = `{"query":"{ __typename }"}`
	for name, exec := range execs {
		for _, accept := range accepts {
			request := func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				if accept != "" {
					r.Header.Set("Accept", accept)
				}
				return r
			}
			want := httptest.NewRecorder()
			transport.POST{}.Do(want, request(), exec)
			got := httptest.NewRecorder()
			r := request()
			servePost(got, r, exec, &graphql.RawParams{Query: "{ __typename }", Headers: r.Header})
			if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) ||
				got.Body.String() != want.Body.String() {
				t.Errorf("%s, Accept %q: servePost answers %d %v %s\ngqlgen answers %d %v %s", name, accept,
					got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
	}
}
