package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/auth"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// queryLadder is a document of n fragments on Query, each spreading the
// next twice: n rungs stand for 2^n copies of the last one's field, though
// the text grows only linearly (23 rungs are 938 bytes).
func queryLadder(n int) string {
	var b strings.Builder
	b.WriteString("{ ...F0 }")
	for i := range n {
		fmt.Fprintf(&b, " fragment F%d on Query { ...F%d ...F%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment F%d on Query { __typename }", n)
	return b.String()
}

// ofTypeLadder is the same under __type, through __Type's ofType, which is
// not a list (gqlparser's introspection depth rule counts lists only), with
// two aliases per rung so that no two fields overlap.
func ofTypeLadder(n int) string {
	var b strings.Builder
	b.WriteString(`{ __type(name: "Query") { ...T0 } }`)
	for i := range n {
		fmt.Fprintf(&b, " fragment T%d on __Type { a: ofType { ...T%d } b: ofType { ...T%d } }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment T%d on __Type { name }", n)
	return b.String()
}

func mustParse(tb testing.TB, query string) *ast.QueryDocument {
	tb.Helper()
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// BenchmarkValidateLadder validates a 30-rung ladder with the server's
// rules, as the handler does before anything else looks at the document.
func BenchmarkValidateLadder(b *testing.B) {
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	for name, query := range map[string]string{"query": queryLadder(30), "ofType": ofTypeLadder(30)} {
		b.Run(name, func(b *testing.B) {
			doc := mustParse(b, query)
			for b.Loop() {
				validator.ValidateWithRules(schema, doc, validationRules(DefaultOptions()))
			}
		})
	}
}

// BenchmarkRefuseLadder is the whole handler's answer to a 30-rung ladder:
// parsing, validation and, for a document that passes it, gqlgen's
// complexity walk.
func BenchmarkRefuseLadder(b *testing.B) {
	h := NewHandler(nil, DefaultOptions())
	for name, query := range map[string]string{"query": queryLadder(30), "ofType": ofTypeLadder(30)} {
		b.Run(name, func(b *testing.B) {
			body, err := json.Marshal(map[string]any{"query": query})
			if err != nil {
				b.Fatal(err)
			}
			ctx := auth.WithPrincipal(context.Background(), auth.FullAccess(auth.KindEnvToken, "bench"))
			for b.Loop() {
				req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if !strings.Contains(rec.Body.String(), `"errors"`) {
					b.Fatalf("a 30-rung ladder was answered: %.200s", rec.Body)
				}
			}
		})
	}
}

// BenchmarkValidateManyOps validates documents of many operations that
// spread one fragment (manyOpsDocuments) with the server's rules.
func BenchmarkValidateManyOps(b *testing.B) {
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	for _, d := range manyOpsDocuments {
		b.Run(d.name, func(b *testing.B) {
			doc := mustParse(b, d.query)
			for b.Loop() {
				validator.ValidateWithRules(schema, doc, validationRules(DefaultOptions()))
			}
		})
	}
}

// BenchmarkCheckManyOps is what the handler does instead of validating
// those documents: checkDocument's counts, which refuse them.
func BenchmarkCheckManyOps(b *testing.B) {
	for _, d := range manyOpsDocuments {
		b.Run(d.name, func(b *testing.B) {
			doc := mustParse(b, d.query)
			for b.Loop() {
				if checkDocument(doc) == nil {
					b.Fatal("not refused")
				}
			}
		})
	}
}

// BenchmarkRefuseManyOps is the whole handler's answer to the same
// documents, parsing included. A document that passes validation is
// cached by its text: past the first iteration it costs only a lookup.
func BenchmarkRefuseManyOps(b *testing.B) {
	h := NewHandler(nil, DefaultOptions())
	for _, d := range manyOpsDocuments {
		b.Run(d.name, func(b *testing.B) {
			body, err := json.Marshal(map[string]any{"query": d.query, "operationName": "Q0"})
			if err != nil {
				b.Fatal(err)
			}
			ctx := auth.WithPrincipal(context.Background(), auth.FullAccess(auth.KindEnvToken, "bench"))
			for b.Loop() {
				req := httptest.NewRequestWithContext(ctx, "POST", "/graphql", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req) // answered or refused: what it costs is the point
			}
		})
	}
}

// BenchmarkValidateWithinBudget validates, with the server's rules, the
// largest document of each shape that checkDocument lets through: what a
// document within the walk budget can still cost.
func BenchmarkValidateWithinBudget(b *testing.B) {
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	for _, s := range []struct {
		name string
		doc  func(n int) string
	}{
		{"aliases", func(n int) string { return manyOps(n, true, aliasedFields(1000)) }},
		{"repeats", func(n int) string { return manyOps(n, true, repeatedField(100)) }},
		{"small repeats", func(n int) string { return manyOps(n, true, repeatedField(20)) }},
		{"chain", func(n int) string { return fragmentChain(10, n) }},
	} {
		b.Run(s.name, func(b *testing.B) {
			query, _ := largestAccepted(b, s.doc)
			doc := mustParse(b, query)
			for b.Loop() {
				if errs := validator.ValidateWithRules(schema, doc, validationRules(DefaultOptions())); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
