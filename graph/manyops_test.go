package graph

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/core"
)

// The benchmarks' documents are within the caps checked before parsing,
// so that they measure what a client can send.
func TestManyOpsDocumentsFitTheCaps(t *testing.T) {
	t.Parallel()
	for _, d := range manyOpsDocuments {
		if len(d.query) > DefaultMaxQueryBytes {
			t.Errorf("%s: %d bytes, over %d", d.name, len(d.query), DefaultMaxQueryBytes)
		}
		if _, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: d.query}, DefaultMaxTokens); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
	}
}

// A document of many operations that each spread a large fragment is
// refused as too costly, with one error that says what to change, and is
// not run. Before the check, the validator walked the fragment again for
// every operation: these took 0.2 to 36 s, and the named ones passed.
func TestManyOperationsAreRefusedAsTooCostly(t *testing.T) {
	t.Parallel()
	h := NewHandler(nil, DefaultOptions())
	for _, d := range manyOpsDocuments {
		t.Run(d.name, func(t *testing.T) {
			res, took := serve(t, h, context.Background(), d.query)
			t.Logf("%d bytes refused in %s", len(d.query), took)
			if len(res.Data) > 0 || len(res.Errors) != 1 {
				t.Fatalf("data %d fields, %d errors, want one refusal: %.300v", len(res.Data), len(res.Errors), res.Errors)
			}
			msg := res.Errors[0].Message
			if res.code() != codeTooComplex || !strings.Contains(msg, "too costly to validate") ||
				!strings.Contains(msg, "send fewer operations in one document") {
				t.Errorf("code %q, message %q; want %s saying to send fewer operations", res.code(), msg, codeTooComplex)
			}
		})
	}
}

// The refusal comes from the count made before gqlparser's validator is
// started (documentCost, ahead of gqlgen's parse and validation), and the
// count stops once its budget is spent: what it does is bounded by the
// budget, not by the document.
func TestManyOperationsAreRefusedBeforeValidation(t *testing.T) {
	t.Parallel()
	ext := documentCost{cache: lru.New[*ast.QueryDocument](10), maxTokens: DefaultMaxTokens}
	for _, d := range manyOpsDocuments {
		t.Run(d.name, func(t *testing.T) {
			err := ext.MutateOperationParameters(context.Background(), &graphql.RawParams{Query: d.query})
			if err == nil || err.Extensions["code"] != codeTooComplex {
				t.Fatalf("not refused before validation: %v", err)
			}
			c := newWalkCounter(mustParse(t, d.query), walkBudget)
			if c.document() {
				t.Fatal("the count passed it")
			}
			// Each spend is a bounded piece of work (a selection visited
			// or collected, a set's comparisons counted): the walk of
			// these documents visits 0.4 to 2 million selections, and the
			// overlap rule makes up to 190 million comparisons.
			t.Logf("%d spends", c.calls)
			if c.calls > walkBudget {
				t.Errorf("%d spends counting, want at most %d", c.calls, walkBudget)
			}
		})
	}
}

// largestAccepted is the document of f(n) for the largest n (up to 5,000)
// that checkDocument accepts.
func largestAccepted(t testing.TB, f func(n int) string) (string, int) {
	t.Helper()
	lo, hi := 0, 5000
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if checkDocument(mustParse(t, f(mid))) == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return f(lo), lo
}

// The count is not an underestimate: for the largest documents of each
// shape it accepts, gqlparser's walk visits no more selections than it
// counted (and the overlap rule's repeated checks take the rest of the
// budget).
func TestWalkCountIsHonest(t *testing.T) {
	t.Parallel()
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	for name, f := range map[string]func(int) string{
		"operations × 60 aliases":    func(n int) string { return manyOps(n, true, aliasedFields(60)) },
		"operations × 1,000 aliases": func(n int) string { return manyOps(n, true, aliasedFields(1000)) },
		"operations × 20 repeats":    func(n int) string { return manyOps(n, true, repeatedField(20)) },
		"operations × 100 repeats":   func(n int) string { return manyOps(n, true, repeatedField(100)) },
		"operations × a chain of 60": func(n int) string { return fragmentChain(n, 60) },
		"10 operations × a chain":    func(n int) string { return fragmentChain(10, n) },
	} {
		t.Run(name, func(t *testing.T) {
			query, n := largestAccepted(t, f)
			if n == 0 {
				t.Fatal("not even one accepted")
			}
			doc := mustParse(t, query)
			visits := 0
			observers := &core.Events{}
			observers.OnField(func(*core.Walker, *ast.Field) { visits++ })
			observers.OnInlineFragment(func(*core.Walker, *ast.InlineFragment) { visits++ })
			observers.OnFragmentSpread(func(*core.Walker, *ast.FragmentSpread) { visits++ })
			core.Walk(schema, doc, observers)
			c := newWalkCounter(doc, walkBudget)
			c.document()
			t.Logf("n = %d: %d visits, %d steps counted", n, visits, c.steps())
			if visits*visitSteps > c.steps() {
				t.Errorf("the walk visited %d selections, %d steps, but %d were counted", visits, visits*visitSteps, c.steps())
			}
		})
	}
}

// The documents clients of this API send are far from the limits: the
// TypeScript client's operations and fragments (all in one document, more
// than it ever sends at once), the Playground's examples, GraphiQL's schema
// query. The admin pages do not use GraphQL.
func TestOrdinaryDocumentsAreCheap(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	ts := ""
	for _, f := range []string{"operations.graphql", "fragments.generated.graphql"} {
		b, err := os.ReadFile("../clients/typescript/src/graphql/" + f)
		if err != nil {
			t.Fatal(err)
		}
		ts += string(b) + "\n"
	}
	docs["the TypeScript client's operations"] = ts
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	docs["GraphiQL's schema query"] = string(introspection)
	playground, err := os.ReadFile("../scripts/playground/main.jsx")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?m)^const (\\w+) = `([^`]*)`").FindAllStringSubmatch(string(playground), -1)
	if len(examples) < 5 {
		t.Fatalf("%d Playground examples found in main.jsx, want its tabs' documents", len(examples))
	}
	for _, m := range examples {
		docs["the Playground's "+m[1]] = m[2]
	}
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	for name, query := range docs {
		t.Run(name, func(t *testing.T) {
			doc := mustParse(t, query)
			if err := checkDocument(doc); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if errs := validator.ValidateWithRules(schema, doc, validationRules(DefaultOptions())); len(errs) > 0 {
				t.Fatalf("does not validate: %v", errs)
			}
			c := newWalkCounter(doc, walkBudget)
			c.document()
			t.Logf("%d operations, %d steps", len(doc.Operations), c.steps())
			if c.steps() > walkBudget/25 {
				t.Errorf("%d steps, want 4%% of the budget (%d) at most", c.steps(), walkBudget/25)
			}
		})
	}
}
