package graph

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	gqlcomplexity "github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// everyField selects every field of the object type typ, and of the
// objects under it, each object type once; lists without first or last.
// Built from the schema, so that a field added later is priced too.
func everyField(schema *ast.Schema, typ string, seen map[string]bool) string {
	seen[typ] = true
	var sel []string
	for _, f := range schema.Types[typ].Fields {
		if strings.HasPrefix(f.Name, "__") {
			continue
		}
		inner := schema.Types[f.Type.Name()]
		switch {
		case inner.Kind == ast.Object && seen[inner.Name]:
			continue
		case inner.Kind == ast.Object:
			sel = append(sel, f.Name+" { "+everyField(schema, inner.Name, seen)+" }")
		default:
			sel = append(sel, f.Name)
		}
	}
	return strings.Join(sel, " ")
}

// pageOfEverything is the contract's largest page, payments(first: 100),
// with every field of Payment, its lists and their items included.
func pageOfEverything(schema *ast.Schema, alias string) string {
	return alias + `payments(first: 100) { edges { cursor node { ` + everyField(schema, "Payment", map[string]bool{}) +
		` } } pageInfo { hasNextPage endCursor } }`
}

// The schema lets payments take first up to 100, and the contract puts no
// limit of its own on a query: a page of 100 payments with every field of
// Payment is answered under the default limit (it was refused at 38 with
// the contract's v1 fields alone), while two such pages in one operation
// are still refused before anything runs.
func TestAPageOfEveryPaymentFieldFits(t *testing.T) {
	t.Parallel()
	schema := NewExecutableSchema(Config{Complexity: complexity()}).Schema()
	query := "{ " + pageOfEverything(schema, "") + " }"
	for _, field := range []string{"processorCalls", "pendingOperation", "nextAction", "refunds", "attempts", "attemptCount"} {
		if !strings.Contains(query, field) {
			t.Fatalf("the query lacks %s: %s", field, query)
		}
	}
	t.Logf("cost %d, limit %d", cost(t, query), DefaultOptions().MaxComplexity)
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		svc := mustService(t, db.Gorm)
		replayed := replayedPayment(t, svc, 3)
		refunded, err := svc.Create(t.Context(), payments.CreateRequest{ClientID: "shop", Amount: "10", Currency: "BRL",
			Method: payments.MethodCreditCard, IdempotencyKey: "k-refunded"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Refund(t.Context(), payments.RefundRequest{PaymentID: refunded.Payment.ID, IdempotencyKey: "k-refund"}); err != nil {
			t.Fatal(err)
		}
		h := NewHandler(svc, DefaultOptions())
		res, _ := serve(t, h, context.Background(), query)
		if len(res.Errors) > 0 {
			t.Fatalf("a page of every field was refused: %+v", res.Errors)
		}
		var page struct {
			Edges []struct {
				Node struct {
					ID       string
					Attempts []json.RawMessage
					Refunds  []json.RawMessage
				}
			}
		}
		if err := json.Unmarshal(res.Data["payments"], &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Edges) != 2 {
			t.Fatalf("%d payments in the page, want 2", len(page.Edges))
		}
		for _, e := range page.Edges {
			if e.Node.ID == replayed && len(e.Node.Attempts) != 4 || e.Node.ID == refunded.Payment.ID && len(e.Node.Refunds) != 1 {
				t.Errorf("payment %s: %d attempts, %d refunds", e.Node.ID, len(e.Node.Attempts), len(e.Node.Refunds))
			}
		}

		twice := "{ " + pageOfEverything(schema, "a: ") + " " + pageOfEverything(schema, "b: ") + " }"
		if res, _ := serve(t, h, context.Background(), twice); res.code() != codeTooComplex || len(res.Data) > 0 {
			t.Errorf("two pages of every field: %s %+v; want %s before anything runs", res.code(), res.Errors, codeTooComplex)
		}
	})
}

// cost is what gqlgen's complexity limit weighs query at.
func cost(t *testing.T, query string) int {
	t.Helper()
	es := NewExecutableSchema(Config{Complexity: complexity()})
	doc, errs := gqlparser.LoadQueryWithRules(es.Schema(), query, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	return gqlcomplexity.Calculate(context.Background(), es, doc.Operations[0], nil)
}
