package graph

import (
	"gorm.io/gorm"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

type response struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Message    string
		Extensions map[string]any
	}
}

// serve posts query to h and returns the answer and how long the handler
// took. A handler still working after stuck is reported as a failure
// instead of hanging the test run (the code before the limits took hours on
// the largest document below).
func serve(t *testing.T, h http.Handler, ctx context.Context, query string) (response, time.Duration) {
	t.Helper()
	return serveAs(t, h, auth.WithPrincipal(ctx, auth.FullAccess(auth.KindEnvToken, "test")), query)
}

// serveAs is serve for the principal in ctx, if any.
func serveAs(t *testing.T, h http.Handler, ctx context.Context, query string) (response, time.Duration) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		h.ServeHTTP(rec, req)
		done <- time.Since(start)
	}()
	const stuck = 20 * time.Second
	var took time.Duration
	select {
	case took = <-done:
	case <-time.After(stuck):
		t.Fatalf("the handler is still working on a %d-byte document after %s", len(query), stuck)
	}
	var out response
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("status %d, not JSON: %.300s", rec.Code, rec.Body)
	}
	return out, took
}

func (r response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// nest repeats `name { inner }` width times, depth levels deep.
func nest(name string, width, depth int, leaf string) string {
	if depth == 0 {
		return leaf
	}
	return strings.Repeat(name+" { "+nest(name, width, depth-1, leaf)+" } ", width)
}

// Documents built to burn CPU in parsing or validation are refused in a
// bounded time, however large. The bound asserted is generous (the goal is
// well under 100 ms), so that a loaded machine does not make the test
// flaky; the documents took seconds to hours before the limits.
func TestCostlyDocumentsAreRefusedQuickly(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	tests := []struct {
		name, query, code string
		bound             time.Duration
	}{
		// 500,000 repeated fields: hours of overlapping-fields validation.
		// Refused by its size before parsing; what the bound leaves room
		// for is reading and decoding the 1 MB body, which under -race on
		// a loaded machine took up to 540 ms.
		{"1 MB of one repeated field", "{ " + strings.Repeat("x ", 500_000) + "}", "GRAPHQL_PARSE_FAILED", 5 * time.Second},
		// Under the byte cap but over the token cap.
		{"too many tokens", "{ " + strings.Repeat("a ", 30_000) + "}", "GRAPHQL_PARSE_FAILED", time.Second},
		// Small enough for both caps; 4,000 fields of one name took a second.
		{"repeated field", "{ " + strings.Repeat("__typename ", 4000) + "}", "GRAPHQL_VALIDATION_FAILED", time.Second},
		// 45 KB, 9,270 tokens: 20 repeats nested three deep took 4 s, the
		// comparisons multiplying at each level.
		{"nested repeats", `{ __type(name: "Query") { ` + nest("ofType", 20, 2, strings.Repeat("name ", 20)) + " } }", "GRAPHQL_VALIDATION_FAILED", time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, took := serve(t, h, context.Background(), tt.query)
			t.Logf("%d bytes refused in %s: %.200s", len(tt.query), took, res.Errors)
			if res.code() != tt.code {
				t.Errorf("code %q, want %s: %+v", res.code(), tt.code, res.Errors)
			}
			if took > tt.bound {
				t.Errorf("the handler took %s, want well under %s", took, tt.bound)
			}
		})
	}
}

// The limits leave room for what clients really send: GraphiQL's schema
// query, fragments that select a field again, and aliases.
func TestOrdinaryDocumentsPass(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	for name, query := range map[string]string{
		"GraphiQL's introspection query": string(introspection),
		"typename":                       `{ __typename }`,
		"fragments selecting a field again": `{ __typename ...A ...B ... on Query { __typename } }
			fragment A on Query { __typename } fragment B on Query { __typename ...A }`,
		"aliases": `{ t: __type(name: "Payment") { name } u: __type(name: "Query") { name fields { name } }
			v: __type(name: "Mutation") { name } }`,
	} {
		t.Run(name, func(t *testing.T) {
			res, took := serve(t, h, context.Background(), query)
			if len(res.Errors) > 0 || len(res.Data) == 0 {
				t.Errorf("errors %+v, data %d fields", res.Errors, len(res.Data))
			}
			t.Logf("answered in %s", took)
		})
	}
}

// A document with thousands of mistakes gets a few dozen errors, not
// thousands (64,000 repeated directives made 63,999 errors and a 10 MB
// answer).
func TestErrorListIsCapped(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	var unknown strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&unknown, " f%d", i)
	}
	for name, query := range map[string]string{
		"repeated directives": "{ __typename " + strings.Repeat("@skip(if: false) ", 1000) + "}",
		"unknown fields":      "{" + unknown.String() + " }",
	} {
		t.Run(name, func(t *testing.T) {
			res, _ := serve(t, h, context.Background(), query)
			if len(res.Errors) < 2 || len(res.Errors) > maxErrors {
				t.Fatalf("%d errors, want between 2 and %d: %.300v", len(res.Errors), maxErrors, res.Errors)
			}
			last := res.Errors[len(res.Errors)-1]
			if !strings.Contains(last.Message, "more errors") || last.Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" {
				t.Errorf("the last error does not say how many were left out: %+v", last)
			}
			for _, e := range res.Errors {
				if e.Extensions["code"] == nil {
					t.Errorf("an error without a code: %+v", e)
				}
			}
		})
	}
}

// A request whose client has gone before it runs is not run: nothing is
// created, and no resolver spends time for nobody.
func TestClientGoneStopsWork(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	h := NewHandler(mustService(t, db.Gorm), DefaultOptions())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _ := serve(t, h, ctx, `mutation { createPayment(input: {clientId: "c", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "gone") { replayed } }`)
	if len(res.Errors) == 0 {
		t.Errorf("a request from a client that went away was answered: %+v", res)
	}
	var n int64
	if err := db.Gorm.Table("payments").Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d payments (%v), want none: the request ran after its client left", n, err)
	}
}

// The overlap rule still runs on documents within its budget, in
// operations and in fragments.
func TestOverlappingFieldsAreStillChecked(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	for _, query := range []string{
		`{ a: __typename a: __schema { description } }`,
		`{ ...F } fragment F on Query { t: __type(name: "Query") { name } t: __type(name: "Payment") { name } }`,
	} {
		res, _ := serve(t, h, context.Background(), query)
		if res.code() != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "conflict") {
			t.Errorf("%s: %+v, want a conflict refused", query, res.Errors)
		}
	}
}

func mustService(t *testing.T, db *gorm.DB) *payments.Service {
	t.Helper()
	svc, err := payments.NewService(db, payments.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// A ladder of fragments, each spreading the next twice, stands for 2^n
// fields in a document of a few hundred bytes. Each form is refused as too
// costly, before gqlgen's complexity walk or anything else opens every
// spread: at 30 rungs that walk takes minutes (the query ladder's depth
// check alone took 404 s), so an answer at all shows it did not happen.
func TestFragmentLaddersAreRefusedAsTooCostly(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	for name, query := range map[string]string{
		"on Query":                queryLadder(30),
		"through __type's ofType": ofTypeLadder(30),
		"in inline fragments": strings.Replace(queryLadder(30), "fragment F0 on Query { ...F1 ...F1 }",
			"fragment F0 on Query { ... on Query { ...F1 } ... { ...F1 } }", 1),
	} {
		t.Run(name, func(t *testing.T) {
			res, took := serve(t, h, context.Background(), query)
			t.Logf("%d bytes refused in %s: %.200v", len(query), took, res.Errors)
			if len(res.Data) > 0 {
				t.Fatalf("answered: %d fields of data", len(res.Data))
			}
			for _, e := range res.Errors {
				if e.Extensions["code"] == codeTooComplex && strings.Contains(e.Message, "more than 10000 fields") {
					return
				}
			}
			t.Errorf("not refused as too costly: %+v", res.Errors)
		})
	}
}

// The count of a document's fields is exact up to the limit and counts
// each fragment once: an ofType ladder of n rungs has 3·2^n - 1 fields,
// and its __type root counts for introspectionFields more.
func TestFieldCountSpreadsEachFragmentOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 5, 11, 40} {
		doc := mustParse(t, ofTypeLadder(n))
		c := newFieldCount(doc.Fragments, maxFields)
		got := c.fields(doc.Operations[0].SelectionSet)
		want := maxFields + 1 // past the limit counts stop
		if n < 20 {
			want = 3<<n - 1 + introspectionFields["__type"]
		}
		if got != want {
			t.Errorf("%d rungs: %d fields, want %d", n, got, want)
		}
		// Each rung has four selections (two fields and a spread in
		// each): a walk of every spread would look at about 2^n.
		if limit := 4*(n+1) + 2; c.steps > limit {
			t.Fatalf("%d rungs: %d selections looked at, want at most %d", n, c.steps, limit)
		}
	}
}

// Introspection roots count for what they answer, which grows with the
// schema and which complexity does not price: GraphiQL's one __schema
// passes (TestOrdinaryDocumentsPass), four aliases of it in a few hundred
// bytes are refused before anything runs, however they are spread.
func TestIntrospectionAliasesAreRefusedAsTooCostly(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	var aliases, spread strings.Builder
	for i := range 4 {
		fmt.Fprintf(&aliases, " a%d: __schema { types { name fields { name } } }", i)
		fmt.Fprintf(&spread, " a%d: __schema { ...S }", i)
	}
	for name, query := range map[string]string{
		"aliases":          "{" + aliases.String() + " }",
		"through fragment": "{" + spread.String() + " } fragment S on __Schema { types { name fields { name } } }",
	} {
		t.Run(name, func(t *testing.T) {
			res, _ := serve(t, h, context.Background(), query)
			if len(res.Data) > 0 || res.code() != codeTooComplex {
				t.Errorf("answered %d bytes of data, errors %+v; want %s", len(res.Data), res.Errors, codeTooComplex)
			}
		})
	}
	three := "{ a: __schema { queryType { name } } b: __schema { queryType { name } } c: __schema { queryType { name } } }"
	if res, _ := serve(t, h, context.Background(), three); len(res.Errors) > 0 {
		t.Errorf("three __schema roots: %+v, want them answered", res.Errors)
	}
}

// Depth counts each fragment once too, and a fragment's depth adds to
// wherever it is spread.
func TestDepthWalksEachFragmentOnce(t *testing.T) {
	t.Parallel()
	doc := mustParse(t, queryLadder(12))
	w := newDepthWalk(doc.Fragments)
	if d := w.depth(doc.Operations[0].SelectionSet); d != 1 {
		t.Errorf("the ladder's depth is %d, want 1", d)
	}
	if limit := 2*12 + 3; w.steps > limit { // a walk of every spread: 2^13
		t.Errorf("%d selections looked at, want at most %d", w.steps, limit)
	}

	doc = mustParse(t, `{ payment(id: "1") { ...P } payments { edges { node { ...P } } } }
		fragment P on Payment { attempts { at } }`)
	if d := newDepthWalk(doc.Fragments).depth(doc.Operations[0].SelectionSet); d != 5 {
		t.Errorf("depth %d, want 5 (payments, edges, node, attempts, at)", d)
	}
}
