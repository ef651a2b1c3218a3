package graph

import (
	"context"
	"fmt"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// walkBudget is how many steps gqlparser's validation of one document may
// take, as walkCounter counts them: visitSteps for every selection its walk
// visits, from every operation and every fragment definition, and one for
// every comparison the overlap rule makes again in the selection sets it
// checks on the way. A step costs 50 to 100 ns with the server's rules, so
// a document within budget is validated in a few tens of milliseconds at
// most (BenchmarkValidateWithinBudget); the largest document a client of
// this API sends, the TypeScript client's operations in one, takes about
// 6,700 (TestOrdinaryDocumentsAreCheap).
const walkBudget = 250_000

// visitSteps is what one selection visited by the walk costs: every rule
// (about 25) looks at it, and the overlap rule walks the document a second
// time, so a visit takes the time of many comparisons. Priced for the
// costliest field to visit, __typename, whose definition the walk builds
// anew each time: 700 ns a visit (id: 155 ns), against 60 to 90 ns a
// comparison, on the shared machine.
const visitSteps = 16

// documentCost refuses, before gqlgen validates it, a document whose
// validation would take too long. gqlparser's validator walks a fragment
// again for every operation that spreads it, and its overlap rule compares
// the fields of every selection set it meets again too, so a document of
// many operations costs their number times the fragment's size though its
// text costs their sum: 1,590 named operations spreading one fragment
// whose field repeats a subfield 400 times (28 KB, within the token cap)
// passed validation after 12 s. The validator cannot be stopped once it has
// started, and rules run inside its walk, so the document is parsed and
// measured here first: an extra parse, which a document already validated
// (in the query cache) does not pay.
type documentCost struct {
	cache     graphql.Cache[*ast.QueryDocument] // the executor's: what is in it was validated
	maxTokens int
}

func (documentCost) ExtensionName() string                   { return "DocumentCost" }
func (documentCost) Validate(graphql.ExecutableSchema) error { return nil }

func (d documentCost) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if _, ok := d.cache.Get(ctx, p.Query); ok {
		return nil
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, d.maxTokens)
	if err != nil {
		return nil // gqlgen parses it again and says what is wrong
	}
	return checkDocument(doc)
}

// checkDocument is the refusal of a document too costly to validate, or
// nil: an operation over maxFields (maxFieldsRule's count), a walk over
// walkBudget, or repeated fields over the overlap rule's budget (its own
// count), each count bounded. A document refused for its fields or its
// repeats gets the answer validation's own rules give (so a client sees
// one refusal whichever check caught it), without the walk they take.
func checkDocument(doc *ast.QueryDocument) *gqlerror.Error {
	fields := newFieldCount(doc.Fragments, maxFields)
	for _, op := range doc.Operations {
		if fields.fields(op.SelectionSet) > maxFields {
			return refusal(codeTooComplex, op.Position, maxFieldsRefusal(maxFields))
		}
	}
	var first *ast.Position
	if len(doc.Operations) > 0 {
		first = doc.Operations[0].Position
	}
	if !newWalkCounter(doc, walkBudget).document() {
		return refusal(codeTooComplex, first, walkRefusal(doc))
	}
	if !withinOverlapBudget(doc, overlapBudget) {
		return refusal(errcode.ValidationFailed, first, overlapRefusal(overlapBudget))
	}
	return nil
}

// walkRefusal is what a document over walkBudget is told.
func walkRefusal(doc *ast.QueryDocument) string {
	return fmt.Sprintf("the document is too costly to validate: its %d operations and %d fragments would take more "+
		"than %d steps, every operation walking again each fragment it spreads; send fewer operations in one "+
		"document, or smaller fragments", len(doc.Operations), len(doc.Fragments), walkBudget)
}

// refusal is an error with code, located at the operation it is about.
func refusal(code string, at *ast.Position, message string) *gqlerror.Error {
	err := gqlerror.Errorf("%s", message)
	if at != nil {
		err.Locations = []gqlerror.Location{{Line: at.Line, Column: at.Column}}
	}
	errcode.Set(err, code)
	return err
}

// walkCounter counts the steps of gqlparser's validation walk
// (core.Walker): each operation, then each fragment definition, is walked
// on its own, entering every fragment it spreads once; within operations
// the overlap rule checks the selection set of every field and inline
// fragment it meets. The first check of each selection set is the overlap
// rule's own count's to bound (withinOverlapBudget): this counts the
// checks made again, when another operation reaches the same set through
// a fragment. It spends the overlapCounter's budget, and stops once the
// budget is spent.
type walkCounter struct {
	*overlapCounter
	doc     *ast.QueryDocument
	budget  int
	checked map[*ast.Selection]bool // selection sets checked once, by their first selection
}

func newWalkCounter(doc *ast.QueryDocument, budget int) *walkCounter {
	return &walkCounter{overlapCounter: newOverlapCounter(doc, budget), doc: doc, budget: budget,
		checked: map[*ast.Selection]bool{}}
}

// steps is how much of the budget the count spent (just past it when it
// stopped): for tests.
func (w *walkCounter) steps() int { return w.budget - w.left }

// document says whether the walk of the whole document stays within
// budget.
func (w *walkCounter) document() bool {
	for _, op := range w.doc.Operations {
		if !w.spend(visitSteps) || !w.walk(op.SelectionSet, map[string]bool{}, true) {
			return false
		}
	}
	for _, f := range w.doc.Fragments {
		if !w.spend(visitSteps) || !w.walk(f.SelectionSet, map[string]bool{}, false) {
			return false
		}
	}
	return true
}

// walk counts one selection set's walk; entered holds the fragments this
// walk has entered already, inOperation whether it started at an
// operation (the overlap rule checks sets only there, but for inline
// fragments).
func (w *walkCounter) walk(set ast.SelectionSet, entered map[string]bool, inOperation bool) bool {
	for _, sel := range set {
		if !w.spend(visitSteps) {
			return false
		}
		var inner ast.SelectionSet
		check := false
		switch sel := sel.(type) {
		case *ast.Field:
			inner, check = sel.SelectionSet, inOperation
		case *ast.InlineFragment:
			inner, check = sel.SelectionSet, true
		case *ast.FragmentSpread:
			f := w.fragments[sel.Name]
			if f == nil || entered[sel.Name] {
				continue
			}
			entered[sel.Name] = true
			inner = f.SelectionSet
		}
		if check && !w.checkAgain(inner) {
			return false
		}
		if !w.walk(inner, entered, inOperation) {
			return false
		}
	}
	return true
}

// checkAgain counts the overlap rule's check of set, unless it is the
// first.
func (w *walkCounter) checkAgain(set ast.SelectionSet) bool {
	if len(set) == 0 {
		return true
	}
	if !w.checked[&set[0]] {
		w.checked[&set[0]] = true
		return true
	}
	return w.within(set)
}
