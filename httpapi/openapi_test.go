package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

var (
	openAPIOnce      sync.Once
	openAPIValidator validator.Validator
	openAPIErr       error
)

// restContract returns a validator for the OpenAPI document the server
// serves, after checking that the document itself is valid OpenAPI 3.1.
// The validator checks answers against a closed copy of the document
// (closedSchemas): the one served leaves them open, since a client must
// accept a member a later version adds, but an answer carrying a member
// the document does not name is a document to update.
func restContract(t *testing.T) validator.Validator {
	t.Helper()
	openAPIOnce.Do(func() {
		spec, err := os.ReadFile("openapi.json")
		if err != nil {
			openAPIErr = err
			return
		}
		if _, openAPIErr = validatorOf(spec, true); openAPIErr != nil {
			return
		}
		if spec, openAPIErr = closedSchemas(spec); openAPIErr != nil {
			return
		}
		openAPIValidator, openAPIErr = validatorOf(spec, false)
	})
	if openAPIErr != nil {
		t.Fatalf("openapi.json: %v", openAPIErr)
	}
	return openAPIValidator
}

// validatorOf builds a validator for the document spec, checking first,
// if asked, that spec is valid OpenAPI.
func validatorOf(spec []byte, checkDocument bool) (validator.Validator, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	if checkDocument {
		if ok, verrs := v.ValidateDocument(); !ok {
			return nil, verrs[0]
		}
	}
	return v, nil
}

// closedSchemas returns spec with every object schema of its components
// that lists its properties, nested ones included, closed to any other
// member (additionalProperties: false) where it does not say otherwise.
func closedSchemas(spec []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, err
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if len(schemas) == 0 {
		return nil, fmt.Errorf("no components.schemas to close")
	}
	var close func(v any)
	close = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["properties"]; ok {
				if _, set := v["additionalProperties"]; !set {
					v["additionalProperties"] = false
				}
			}
			for _, child := range v {
				close(child)
			}
		case []any:
			for _, child := range v {
				close(child)
			}
		}
	}
	close(schemas)
	return json.Marshal(doc)
}

// checkREST validates one REST exchange against the OpenAPI document. b.raw
// calls it for every request to /api, so every REST test checks that the
// document describes what the server does.
func checkREST(t *testing.T, req *http.Request, body string, res *http.Response, resBody []byte) {
	t.Helper()
	for _, v := range restViolations(t, req, body, res, resBody) {
		t.Error(v)
	}
}

// restViolations is how one REST exchange departs from the OpenAPI
// document, a line each; none for a route outside /api.
func restViolations(t *testing.T, req *http.Request, body string, res *http.Response, resBody []byte) []string {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return nil
	}
	// The validator reads both bodies; give it fresh copies.
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(strings.NewReader(body))
	copied := *res
	copied.Body = io.NopCloser(bytes.NewReader(resBody))
	ok, errs := restContract(t).ValidateHttpRequestResponse(req, &copied)
	if ok {
		return nil
	}
	var out []string
	for _, e := range errs {
		// A request the server must refuse (a bad body, a bad key, no
		// token, a method the route lacks) is outside the document by
		// definition: only its answer is checked.
		if res.StatusCode >= 400 && e.ValidationType != "response" {
			continue
		}
		line := fmt.Sprintf("%s %s → %d: not as openapi.json says: %s (%s)", req.Method, req.URL.Path, res.StatusCode, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			line += fmt.Sprintf("; %s: %s", se.FieldPath, se.Reason)
		}
		out = append(out, line)
	}
	return out
}

// The document is served, open, and is the one the tests check against.
func TestOpenAPIDocumentServed(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res, body := b.raw(t, "GET", "/api/openapi.json", nil, "")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	spec, _ := os.ReadFile("openapi.json")
	if !bytes.Equal(body, spec) {
		t.Error("the served document is not openapi.json")
	}
	restContract(t)
	for _, route := range []string{`"/api/payments"`, `"/api/payments/{id}"`, `"/api/payments/{id}/capture"`,
		`"/api/payments/{id}/cancel"`, `"/api/payments/{id}/refunds"`, `"/api/payments/{id}/refunds/{refundId}"`} {
		if !bytes.Contains(spec, []byte(route)) {
			t.Errorf("openapi.json does not describe %s", route)
		}
	}
}

// A field an answer carries that openapi.json does not name fails the
// check: the tests read the answers' schemas as closed (closedSchemas),
// nested objects included, so a field added to restjson or a problem's
// details without the document fails every REST test that meets it.
func TestOpenAPIRefusesUndocumentedFields(t *testing.T) {
	t.Parallel()
	ex := restAnswers(t)
	tests := []struct {
		name string
		ex   openAPIExchange
		path []any // where in the answer to add a field: keys and indexes
	}{
		{"payment", ex.card, nil},
		{"payment's refund", ex.withRefund, []any{"refunds", 0}},
		{"payment's next action", ex.pix, []any{"nextAction"}},
		{"refund answer", ex.refund, nil},
		{"refund answer's payment", ex.refund, []any{"payment"}},
		{"refund", ex.oneRefund, nil},
		{"problem", ex.bad, nil},
		{"problem's problems", ex.bad, []any{"problems", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := withUndocumentedField(t, tt.ex.out, tt.path)
			got := restViolations(t, tt.ex.req, tt.ex.body, tt.ex.res, extra)
			if !strings.Contains(strings.Join(got, "\n"), "undocumentedField") {
				t.Errorf("an answer with a field openapi.json lacks passed the check (%v): %s", got, extra)
			}
		})
	}
}

// openAPIExchange is one REST request, its body, and the answer.
type openAPIExchange struct {
	req  *http.Request
	body string
	res  *http.Response
	out  []byte
}

// restAnswerShapes are the exchanges restAnswers makes.
type restAnswerShapes struct{ card, refund, withRefund, oneRefund, pix, bad openAPIExchange }

// restAnswers are an answer of each shape the REST API gives: a card
// payment, a refund of it, the payment with its refund, the refund alone,
// a Pix payment with its next action, and a problem.
func restAnswers(t *testing.T) (ex restAnswerShapes) {
	cfg := processor.DefaultConfig()
	cfg.SandboxMethods = processor.SandboxAsync
	db := dbtest.SQLite(t)
	svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, db, func(d *httpapi.Deps) { d.Service = svc })
	send := func(method, path string, header http.Header, body string) openAPIExchange {
		t.Helper()
		res, out := b.raw(t, method, path, header, body) // checked as it is
		req, err := http.NewRequest(method, b.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		return openAPIExchange{req, body, res, out}
	}
	ex.card = send("POST", "/api/payments", restHeaders("open-card"), `{"clientId":"shop-1","amount":"10.00","currency":"BRL","method":"CREDIT_CARD"}`)
	var paid struct{ ID string }
	if err := json.Unmarshal(ex.card.out, &paid); err != nil || ex.card.res.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", ex.card.res.StatusCode, ex.card.out)
	}
	ex.refund = send("POST", "/api/payments/"+paid.ID+"/refunds", restHeaders("open-refund"), `{"amount":"1.00"}`)
	var refunded struct{ ID string }
	if err := json.Unmarshal(ex.refund.out, &refunded); err != nil || ex.refund.res.StatusCode != http.StatusCreated {
		t.Fatalf("refund: %d %s", ex.refund.res.StatusCode, ex.refund.out)
	}
	ex.withRefund = send("GET", "/api/payments/"+paid.ID, restHeaders(""), "")
	ex.oneRefund = send("GET", "/api/payments/"+paid.ID+"/refunds/"+refunded.ID, restHeaders(""), "")
	ex.pix = send("POST", "/api/payments", restHeaders("open-pix"), `{"clientId":"shop-1","amount":"5.00","currency":"BRL","method":"PIX"}`)
	ex.bad = send("POST", "/api/payments", restHeaders("open-bad"), `{"clientId":"shop-1","amount":"5.00","currency":"XYZ","method":"PIX"}`)
	if ex.pix.res.StatusCode != http.StatusCreated || ex.bad.res.StatusCode != http.StatusBadRequest {
		t.Fatalf("pix %d %s; bad input %d %s", ex.pix.res.StatusCode, ex.pix.out, ex.bad.res.StatusCode, ex.bad.out)
	}
	return ex
}

// withUndocumentedField is the answer out with a field added to the object
// path leads to (keys and indexes).
func withUndocumentedField(t *testing.T, out []byte, path []any) []byte {
	var answer any
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatal(err)
	}
	at := answer
	for _, step := range path {
		switch s := step.(type) {
		case string:
			at = at.(map[string]any)[s]
		case int:
			at = at.([]any)[s]
		}
	}
	obj, ok := at.(map[string]any)
	if !ok {
		t.Fatalf("%v in %s is not an object", path, out)
	}
	obj["undocumentedField"] = "x"
	extra, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	return extra
}
