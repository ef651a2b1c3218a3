package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/cmpay/cmpay/internal/dbtest"
)

var (
	openAPIOnce      sync.Once
	openAPIValidator validator.Validator
	openAPIErr       error
)

// restContract returns a validator for the OpenAPI document the server
// serves, after checking that the document itself is valid OpenAPI 3.1.
func restContract(t *testing.T) validator.Validator {
	t.Helper()
	openAPIOnce.Do(func() {
		spec, err := os.ReadFile("openapi.json")
		if err != nil {
			openAPIErr = err
			return
		}
		doc, err := libopenapi.NewDocument(spec)
		if err != nil {
			openAPIErr = err
			return
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			openAPIErr = errs[0]
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			openAPIErr = verrs[0]
			return
		}
		openAPIValidator = v
	})
	if openAPIErr != nil {
		t.Fatalf("openapi.json: %v", openAPIErr)
	}
	return openAPIValidator
}

// checkREST validates one REST exchange against the OpenAPI document. b.raw
// calls it for every request to /api, so every REST test checks that the
// document describes what the server does.
func checkREST(t *testing.T, req *http.Request, body string, res *http.Response, resBody []byte) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return
	}
	// The validator reads both bodies; give it fresh copies.
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(strings.NewReader(body))
	copied := *res
	copied.Body = io.NopCloser(bytes.NewReader(resBody))
	if ok, errs := restContract(t).ValidateHttpRequestResponse(req, &copied); !ok {
		for _, e := range errs {
			// A request the server must refuse (a bad body, a bad key, no
			// token, a method the route lacks) is outside the document by
			// definition: only its answer is checked.
			if res.StatusCode >= 400 && e.ValidationType != "response" {
				continue
			}
			t.Errorf("%s %s → %d: not as openapi.json says: %s (%s)", req.Method, req.URL.Path, res.StatusCode, e.Message, e.Reason)
		}
	}
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
