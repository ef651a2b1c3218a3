package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every /api route: its
// headers, bodies, statuses and problem codes. It is written by hand, and
// kept true by the REST tests, which validate every request they send and
// every answer they get against it (openapi_test.go): a route, status or
// field the document does not describe fails them.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves GET /api/openapi.json, open like the Playground.
func openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}
