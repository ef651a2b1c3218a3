package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cmpay/cmpay/apitoken"
	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/staff"
)

const (
	token         = "test-token"
	adminPassword = "admin-password"
	shopOrigin    = "https://shop.example"
)

type bundle struct {
	db      dbtest.DB
	tokens  *apitoken.Store
	svc     *payments.Service
	staff   *staff.Store
	srv     *httptest.Server
	handler http.Handler

	adminOnce sync.Once
	admin     *staffClient
}

// cheapHash keeps argon2id fast in tests: same format and code, less work.
var cheapHash = staff.HashParams{Memory: 64, Time: 1, Threads: 1}

// setup serves the whole HTTP surface over db, changed by the options.
func setup(t *testing.T, db dbtest.DB, change ...func(*httpapi.Deps)) *bundle {
	t.Helper()
	return setupB(t, db, change...)
}

// setupB is setup for tests and benchmarks alike.
func setupB(t testing.TB, db dbtest.DB, change ...func(*httpapi.Deps)) *bundle {
	t.Helper()
	sqlDB, err := db.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(sqlDB)
	svc, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: m.OnAttempt})
	if err != nil {
		t.Fatal(err)
	}
	st := staff.New(db.Gorm, staff.Config{Hash: cheapHash})
	if _, err := st.Bootstrap(context.Background(), "admin", adminPassword); err != nil {
		t.Fatal(err)
	}
	deps := httpapi.Deps{
		Service:     svc,
		Ping:        database.Pinger(db.Gorm),
		Metrics:     m,
		APITokens:   []string{"other-token", token},
		Tokens:      apitoken.NewStore(db.Gorm, apitoken.Options{CacheTTL: -1}),
		Staff:       st,
		CORSOrigins: []string{shopOrigin},
		Logger:      slog.New(slog.DiscardHandler),
	}
	for _, c := range change {
		c(&deps)
	}
	if deps.Tokens != nil {
		t.Cleanup(deps.Tokens.Close) // before the database closes: its last-use writes end first
	}
	if deps.Staff != nil {
		t.Cleanup(deps.Staff.Close) // the same for sessions' last uses
	}
	handler := httpapi.NewHandler(deps)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return &bundle{db: db, tokens: deps.Tokens, svc: svc, staff: st, srv: srv, handler: handler}
}

// raw sends a request and returns the response with its body read.
func (b *bundle) raw(t *testing.T, method, path string, header http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkREST(t, req, body, res, out)
	return res, out
}

// gqlResponse is a GraphQL response as the wire carries it.
type gqlResponse struct {
	Status int `json:"-"`
	Data   map[string]json.RawMessage
	Errors []gqlError
}

type gqlError struct {
	Message    string
	Path       []any
	Extensions map[string]any
}

func (r gqlResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// post sends a raw body to /graphql with the test token.
func (b *bundle) post(t *testing.T, body string) gqlResponse {
	t.Helper()
	return b.do(t, "POST", "/graphql", token, "application/json", body)
}

func (b *bundle) do(t *testing.T, method, path, bearer, contentType, body string) gqlResponse {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := gqlResponse{Status: res.StatusCode}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: status %d, body is not JSON: %s", method, path, res.StatusCode, raw)
	}
	return out
}

// gql sends a query with variables.
func (b *bundle) gql(t *testing.T, query string, vars map[string]any) gqlResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	return b.post(t, string(body))
}

const createMutation = `mutation Create($input: CreatePaymentInput!, $key: String!) {
  createPayment(input: $input, idempotencyKey: $key) {
    replayed
    payment { id clientId amount currency method idempotencyKey createdAt replayCount rejectedCount
      attempts { outcome at differingFields } }
  }
}`

type paymentJSON struct {
	ID             string
	ClientID       string
	Amount         string
	Currency       string
	Method         string
	IdempotencyKey string
	CreatedAt      string
	ReplayCount    int
	RejectedCount  int
	Attempts       []struct {
		Outcome         string
		At              string
		DifferingFields []string
	}
}

type createPayload struct {
	Replayed bool
	Payment  paymentJSON
}

// create runs createPayment with the amount as given (a string or a
// json.Number), failing the test on any error.
func (b *bundle) create(t *testing.T, key string, input map[string]any) createPayload {
	t.Helper()
	res := b.gql(t, createMutation, map[string]any{"input": input, "key": key})
	if res.Status != http.StatusOK || len(res.Errors) > 0 {
		t.Fatalf("createPayment: status %d, errors %+v", res.Status, res.Errors)
	}
	var out createPayload
	if err := json.Unmarshal(res.Data["createPayment"], &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func input(client string, amount any, currency, method string) map[string]any {
	return map[string]any{"clientId": client, "amount": amount, "currency": currency, "method": method}
}

func basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}
