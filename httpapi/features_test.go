package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/staff"
)

func TestCORS(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	preflight := func(origin, headers string) *http.Response {
		res, _ := b.raw(t, "OPTIONS", "/graphql", http.Header{
			"Origin":                         {origin},
			"Access-Control-Request-Method":  {"POST"},
			"Access-Control-Request-Headers": {headers},
		}, "")
		return res
	}
	res := preflight(shopOrigin, "authorization,content-type")
	if res.StatusCode >= 300 || res.Header.Get("Access-Control-Allow-Origin") != shopOrigin ||
		!strings.Contains(strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight from %s: %d %v", shopOrigin, res.StatusCode, res.Header)
	}
	if res := preflight(shopOrigin, "idempotency-key"); res.Header.Get("Access-Control-Allow-Origin") != shopOrigin {
		t.Errorf("preflight for Idempotency-Key: %v", res.Header)
	}
	if res := preflight("https://evil.example", "authorization"); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from an unknown origin was allowed: %v", res.Header)
	}
	res, _ = b.raw(t, "POST", "/graphql", http.Header{"Origin": {shopOrigin}, "Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}},
		`{"query":"{ payments { edges { cursor } } }"}`)
	if res.Header.Get("Access-Control-Allow-Origin") != shopOrigin || !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("actual request from %s: %v", shopOrigin, res.Header)
	}

	closed := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) { d.CORSOrigins = nil })
	res, _ = closed.raw(t, "OPTIONS", "/graphql", http.Header{"Origin": {shopOrigin}, "Access-Control-Request-Method": {"POST"}}, "")
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("without CORS_ORIGINS a preflight was allowed: %v", res.Header)
	}
}

func TestGraphQLLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.GraphQL = &graph.Options{Introspection: false, MaxDepth: 4, MaxComplexity: 300}
		d.MaxBodyBytes = 4096
	})
	deep := b.gql(t, `{ payments { edges { node { attempts { outcome } } } } }`, nil)
	if deep.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(deep.Errors[0].Message, "depth 5 exceeds the limit of 4") {
		t.Errorf("too deep: %+v", deep)
	}
	viaFragment := b.gql(t, `{ payments { ...E } } fragment E on PaymentConnection { edges { node { attempts { at } } } }`, nil)
	if viaFragment.code() != "GRAPHQL_VALIDATION_FAILED" {
		t.Errorf("too deep through a fragment: %+v", viaFragment)
	}
	costly := b.gql(t, `{ payments(first: 100) { edges { node { id amount } } } }`, nil)
	if costly.code() != "COMPLEXITY_LIMIT_EXCEEDED" || costly.Status != http.StatusOK && costly.Status != http.StatusUnprocessableEntity {
		t.Errorf("too complex: %d %+v", costly.Status, costly)
	}
	if ok := b.gql(t, `{ payments(first: 10) { edges { node { id amount } } } }`, nil); len(ok.Errors) > 0 {
		t.Errorf("a modest query was refused: %+v", ok)
	}
	intro := b.gql(t, `{ __schema { types { name } } }`, nil)
	if intro.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(intro.Errors[0].Message, "introspection is switched off") {
		t.Errorf("introspection while off: %+v", intro)
	}
	if typename := b.gql(t, `{ __typename }`, nil); len(typename.Errors) > 0 {
		t.Errorf("__typename while introspection is off: %+v", typename)
	}

	// Bodies over the cap, with a length and streamed without one.
	big := `{"query":"{ __typename }","variables":{"pad":"` + strings.Repeat("x", 5000) + `"}}`
	if res := b.post(t, big); res.Status != http.StatusRequestEntityTooLarge || res.code() != "PAYLOAD_TOO_LARGE" {
		t.Errorf("large body: %d %+v", res.Status, res)
	}
	req, _ := http.NewRequest("POST", b.srv.URL+"/graphql", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || req.ContentLength > 0 {
		t.Errorf("large streamed body (length %d): %d", req.ContentLength, res.StatusCode)
	}

	open := setup(t, dbtest.SQLite(t))
	if res := open.gql(t, `{ __schema { queryType { name } } }`, nil); len(res.Errors) > 0 {
		t.Errorf("introspection by default: %+v", res)
	}
}

func TestPersistedQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	query := `{ payments(first: 1) { pageInfo { hasNextPage } } }`
	sum := sha256.Sum256([]byte(query))
	ext := fmt.Sprintf(`"extensions":{"persistedQuery":{"version":1,"sha256Hash":"%s"}}`, hex.EncodeToString(sum[:]))

	if res := b.post(t, `{`+ext+`}`); res.code() != "PERSISTED_QUERY_NOT_FOUND" {
		t.Fatalf("unknown hash: %+v", res)
	}
	if res := b.post(t, fmt.Sprintf(`{"query":%q,%s}`, query, ext)); len(res.Errors) > 0 {
		t.Fatalf("register: %+v", res)
	}
	if res := b.post(t, `{`+ext+`}`); len(res.Errors) > 0 || res.Data["payments"] == nil {
		t.Errorf("by hash: %+v", res)
	}
	getURL := "/graphql?extensions=" + strings.ReplaceAll(fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":"%s"}}`, hex.EncodeToString(sum[:])), `"`, "%22")
	if res := b.do(t, "GET", getURL, token, "", ""); len(res.Errors) > 0 || res.Data["payments"] == nil {
		t.Errorf("by hash over GET: %+v", res)
	}
}

// Every error a client can get carries extensions.code, the request id is
// in a header of every response, and an internal error shows only that id.
func TestErrorsCarryCodes(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	for _, tt := range []struct {
		method, contentType, path, body string
		status                          int
	}{
		{"PUT", "application/json", "/graphql", `{"query":"{ __typename }"}`, 405},
		{"DELETE", "", "/graphql", ``, 405},
		{"POST", "text/plain", "/graphql", `{"query":"{ __typename }"}`, 415},
		{"POST", "application/graphql", "/graphql", `{ __typename }`, 415},
		{"GET", "", "/graphql?query=" + `mutation%7BcreatePayment(input:%7BclientId:"c",amount:"1",currency:"BRL",method:PIX%7D,idempotencyKey:"k")%7Breplayed%7D%7D`, "", 405},
		{"GET", "", "/graphql", ``, 400},
		{"POST", "application/json", "/graphql", `{"qeury":"{ __typename }"}`, 400},
	} {
		res := b.do(t, tt.method, tt.path, token, tt.contentType, tt.body)
		if res.Status != tt.status || res.code() == "" {
			t.Errorf("%s %s (%s): status %d, errors %+v; want %d and a code", tt.method, tt.path, tt.contentType, res.Status, res.Errors, tt.status)
		}
	}
	var n int64
	b.db.Gorm.Table("payments").Count(&n)
	if n != 0 {
		t.Errorf("a GET mutation created %d payments", n)
	}
	for _, path := range []string{"/graphql", "/healthz", "/api/payments", "/nope"} {
		res, _ := b.raw(t, "GET", path, nil, "")
		if !strings.HasPrefix(res.Header.Get("X-Request-Id"), "req_") {
			t.Errorf("GET %s: X-Request-Id %q", path, res.Header.Get("X-Request-Id"))
		}
	}
}

// Not parallel: it swaps the default logger, which internal errors use.
func TestInternalErrorShowsOnlyARequestID(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))

	b := setup(t, dbtest.SQLite(t))
	sqlDB, _ := b.db.Gorm.DB()
	sqlDB.Close() // every query now fails inside the server

	res, raw := b.raw(t, "POST", "/graphql", http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}},
		`{"query":"{ payments { edges { cursor } } }"}`)
	var body gqlResponse
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	id := res.Header.Get("X-Request-Id")
	if body.code() != "INTERNAL_SERVER_ERROR" || body.Errors[0].Message != "internal error" || body.Errors[0].Extensions["requestId"] != id {
		t.Errorf("internal error as the client sees it: %s (request id %s)", raw, id)
	}
	if strings.Contains(strings.ToLower(string(raw)), "sql") {
		t.Errorf("the client sees database details: %s", raw)
	}
	if !strings.Contains(logs.String(), `"request_id":"`+id+`"`) || !strings.Contains(logs.String(), "database is closed") {
		t.Errorf("the log does not hold the error under %s:\n%s", id, logs.String())
	}

	res, raw = b.raw(t, "POST", "/api/payments", restHeaders("k"), `{"clientId":"c","amount":"1","currency":"BRL","method":"PIX"}`)
	if res.StatusCode != 500 || !strings.Contains(string(raw), res.Header.Get("X-Request-Id")) || strings.Contains(string(raw), "closed") {
		t.Errorf("REST internal error: %d %s", res.StatusCode, raw)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	b.create(t, "m1", input("c", "1", "BRL", "PIX"))
	b.create(t, "m1", input("c", "1", "BRL", "PIX"))
	b.gql(t, createMutation, map[string]any{"input": input("c", "2", "BRL", "PIX"), "key": "m1"})
	b.raw(t, "POST", "/api/payments", restHeaders("m2"), `{"clientId":"c","amount":"1","currency":"BRL","method":"PIX"}`)

	for name, header := range map[string]http.Header{
		"nothing":      nil,
		"wrong admin":  {"Authorization": {"Basic " + basic("admin", "nope")}},
		"wrong bearer": {"Authorization": {"Bearer nope"}},
	} {
		if res, _ := b.raw(t, "GET", "/metrics", header, ""); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("/metrics with %s: %d, want 401", name, res.StatusCode)
		}
	}
	res, _ := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Bearer " + token}}, "")
	if res.StatusCode != http.StatusOK {
		t.Errorf("/metrics with a token: %d", res.StatusCode)
	}
	// HTTP Basic with a staff account: admins only.
	if _, err := b.staff.Add(t.Context(), staff.CommandLine, "watcher", staff.Operator, "watcher-password"); err != nil {
		t.Fatal(err)
	}
	if res, _ := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Basic " + basic("watcher", "watcher-password")}}, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics as an operator: %d, want 401", res.StatusCode)
	}
	// The first admin's generated password, and an admin's temporary one,
	// read /metrics (the sign-in form still asks for the change); a
	// disabled admin does not.
	first, err := b.staff.Bootstrap(t.Context(), "first-admin", "")
	if err != nil || first.Generated == "" {
		t.Fatalf("bootstrap: %+v, %v", first, err)
	}
	temporary, err := b.staff.Add(t.Context(), staff.CommandLine, "newcomer", staff.Admin, "")
	if err != nil {
		t.Fatal(err)
	}
	for user, password := range map[string]string{"first-admin": first.Generated, "newcomer": temporary} {
		if res, _ := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Basic " + basic(user, password)}}, ""); res.StatusCode != http.StatusOK {
			t.Errorf("/metrics as %s with a password still to change: %d, want 200", user, res.StatusCode)
		}
	}
	if res, _ := b.newClient(t).post(t, "/admin/login", url.Values{"username": {"first-admin"}, "password": {first.Generated}}); res.Header.Get("Location") != "/admin/account" {
		t.Errorf("first sign-in with the generated password went to %q, want /admin/account", res.Header.Get("Location"))
	}
	if err := b.staff.Disable(t.Context(), staff.CommandLine, "newcomer"); err != nil {
		t.Fatal(err)
	}
	if res, _ := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Basic " + basic("newcomer", temporary)}}, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics as a disabled admin: %d, want 401", res.StatusCode)
	}
	res, text := b.raw(t, "GET", "/metrics", http.Header{"Authorization": {"Basic " + basic("admin", adminPassword)}}, "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics as admin: %d", res.StatusCode)
	}
	for _, want := range []string{
		`cmpay_payments_created_total{transport="graphql"} 1`,
		`cmpay_payments_created_total{transport="rest"} 1`,
		`cmpay_idempotency_keys_replayed_total{transport="graphql"} 1`,
		`cmpay_idempotency_keys_rejected_total{transport="graphql"} 1`,
		`cmpay_request_duration_seconds_count{operation="createPayment",status="2xx"} 3`,
		`cmpay_request_duration_seconds_count{operation="rest:createPayment",status="2xx"} 1`,
		`go_sql_max_open_connections{db_name="cmpay"}`,
		`go_sql_in_use_connections{db_name="cmpay"}`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
